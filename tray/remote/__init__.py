"""Sessions on other machines, over the user's own OpenSSH.

The remote runs ``tray status --watch --format jsonl`` (:mod:`tray.remote.stream`) and
writes framed lines (:mod:`tray.remote.frames`) to its stdout; here, one ``ssh`` per
configured host (:mod:`tray.core.hosts.ssh_commands`) carries them to a :class:`~tray.remote.link.
HostLink`, which turns them into namespaced sessions (:mod:`tray.core.hosts.remote_sessions`) for
the app. Nothing listens on a port: ssh is the only transport, and the remote end lives
exactly as long as the ssh session that started it. Every ssh child starts in
:mod:`tray.remote.ssh`; the one-shot commands (doctor's check, ``tray status --host``,
dismiss, focus and answer) are :mod:`tray.remote.actions`.
"""

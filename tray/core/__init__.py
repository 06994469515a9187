"""Pure: the domain, one folder a feature, no I/O (time comes in as an argument).

From the bottom up, each folder importing only those before it:
:mod:`~tray.core.answers` (the gate, its keys, the phone's tokens),
:mod:`~tray.core.config` (the user's settings, one parser),
:mod:`~tray.core.session` (the contract's session and its labels),
:mod:`~tray.core.agents` (what an agent's rules make of its output),
:mod:`~tray.core.away` (whether the user is at the desk),
:mod:`~tray.core.hosts` (other machines' sessions, ssh's argv and failures),
:mod:`~tray.core.view` (what the icon and menu show),
:mod:`~tray.core.policy` (which changes become notifications, and when), and
:mod:`~tray.core.worker` (the app worker's pure loop: refresh and deadlines)."""

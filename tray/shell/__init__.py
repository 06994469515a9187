"""Shell integration: ``tray init bash|zsh|fish`` and the record of a long command's end.

The rc snippets (``tray.bash``, ``tray.zsh``, ``tray.fish``) are package data that
:mod:`tray.shell.init` fills in; :mod:`tray.shell.finished` is what their prompt hooks
call, in the background, after a command that ran longer than ``[notify] done_after``.
"""

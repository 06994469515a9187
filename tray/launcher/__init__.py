"""``tray run``: a command on its own pty, its bytes passed through, its reports recorded."""

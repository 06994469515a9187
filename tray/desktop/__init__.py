"""Desktop adapters shared by the app and ``tray doctor``: D-Bus calls, the tray host,
each terminal's focus call, idle and screen-lock detection. One kind of I/O a module."""

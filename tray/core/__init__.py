"""Pure: the domain. A session and its labels, the answer gate and its keys, the config's
parsing, the notification policy (:mod:`tray.core.policy`) and what the icon and menu
show (:mod:`tray.core.view`). No I/O: time comes in as an argument."""

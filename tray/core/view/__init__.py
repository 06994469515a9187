"""Pure: what the icon and the menu show, built afresh at each refresh (the overview
and the tray's own marks)."""

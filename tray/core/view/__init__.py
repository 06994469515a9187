"""Pure: what the icon and the menu show, built afresh at each refresh (overview, the
hosts' view, the tray's own marks, and the refresh itself)."""

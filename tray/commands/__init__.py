"""The commands beside ``run`` and ``app``: status bars, doctor, demo, autostart."""

"""tray: know, from anywhere on your desktop, which terminal session needs you."""

__version__ = "0.1.0"

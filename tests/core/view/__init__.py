"""Tests of tray.core.view."""

"""Tests of tray/app without a desktop: policy, overview, menu, refresh, memory, worker."""

"""Tests of the core: session, store, config, watcher, live sessions, text, values,
answering and away rules."""

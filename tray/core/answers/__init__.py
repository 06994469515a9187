"""Pure: which prompts tray may answer, with which keys, and the phone's signed tokens."""

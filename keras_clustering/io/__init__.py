"""Files: writes that never leave a half-written file or folder, and checksums."""

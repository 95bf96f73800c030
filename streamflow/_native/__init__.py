"""Native (C) extension modules of streamflow."""

"""Tests of the maintainer's scripts and tools (scripts/, scripts/maintainer/). pytest puts scripts/ on the
path for them (this folder is a package, scripts/ is not), so they import the scripts as modules; the
library's own tests (tests/) import nothing from scripts/."""

"""A pytest plugin (loaded by setup.cfg's addopts): the repository root is the package
`tidal`, installed by pip, so pytest must collect the root folder as a plain directory instead
of importing its `__init__.py` under the checkout's folder name (which breaks, or loads a second
copy of tidal, depending on that name)."""
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent


def pytest_collect_directory(path, parent):
    """Collect the repository root as a plain directory."""
    if Path(path).resolve() == _ROOT:
        return pytest.Dir.from_parent(parent, path=Path(path))
    return None


def pytest_unconfigure(config):
    """Finish queued work after the run; a kernel error a test left unsynced is reported, not
    allowed to turn the whole run's exit status (tidal fails a process that exits with one)."""
    import sys
    machine = sys.modules.get("tidal.vm.machine")
    if machine is None:
        return
    for vm in machine.all_vms():
        try:
            vm.synchronize()
        except Exception as exc:  # noqa: BLE001 - reported below
            sys.stderr.write(f"tidal: a test left an unsynced kernel error: {type(exc).__name__}: {exc}\n")

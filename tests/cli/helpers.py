"""Helpers of the CLI and import-graph tests."""

# A meta-path finder that makes the named top-level modules uninstallable, as on a core install
# (pip install rescue-bench without extras): the start of a `python -c` probe, whose first argument
# is the comma-separated list of modules to refuse.
BLOCKER = """
import sys
BLOCKED = set(sys.argv[1].split(","))
class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NotInstalled())
"""

import sys
def test_probe():
    print("\nMODNAME", __name__, "main" in sys.modules, [m for m in sys.modules if m.startswith(("main", "tidal.perf"))][:5])
    print(sys.path[:3])

"""torch.utils.benchmark.Timer's device (kernel) time on tidal counts only the kernels of the timed statement: the
kernels of its `setup` (run by timeit before its first clock reading) were counted too, so a statement with no
kernel of its own reported more device time than wall time."""

import tidal
from tidal.utils import benchmark as B



def test_setup_kernels_are_not_device_time():
    timer = B.Timer("y = x", setup="import tidal; x = tidal.randn(400000) * 2 + 1; z = x.sum()")
    m = timer.timeit(3)
    assert m.kernel_times == [0.0]     # `y = x` runs no kernel
    assert 0 < m.host_times[0] <= m.times[0]


def test_statement_kernels_stay_device_time():
    x = tidal.randn(256, 256)
    m = B.Timer("y = (x @ x).sum()", setup="w = tidal.randn(300000).exp()", globals={"x": x, "tidal": tidal}).timeit(4)
    assert 0 < m.kernel_times[0]

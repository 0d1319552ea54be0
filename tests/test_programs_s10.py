"""A second hunt with real programs (issue 15): the corners of module hooks, attention masks, torch.testing,
optimizers and schedulers that programs reach, each run on real torch and on `tidal.compat` from NumPy-made
weights and data; values, dtypes, warnings and errors (type and message) must agree."""
import warnings

import numpy as np
import pytest
import torch as real_torch

import tidal.compat as tidal_torch
from test_programs_s9 import FRAMEWORKS, data, init, run_both


def outcome(call) -> tuple:
    """('ok', result) or the exception's type name and message (tidal's namespace printed as torch's)."""
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return type(exc).__name__, str(exc).replace("tidal.", "torch.")


# -- state_dict hooks through torch's private API, which libraries call -----------------------------------------------
def state_dict_hooks(T):
    log = []
    m = T.nn.Linear(2, 2)
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix, keep_vars)))
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: log.append(("post", sorted(sd))))
    renamed = T.nn.Linear(2, 2)
    renamed._register_state_dict_hook(lambda mod, sd, prefix, meta: {k.upper(): v for k, v in sd.items()})
    log.append(sorted(renamed.state_dict()))
    m.state_dict(prefix="p.")
    m._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: log.append(("load", sorted(sd), prefix)))
    m._register_load_state_dict_pre_hook(lambda mod, sd, *rest: log.append(("with module", type(mod).__name__)),
                                         with_module=True)
    m.load_state_dict({"weight": T.zeros(2, 2), "bias": T.zeros(2)})
    public = T.nn.Linear(1, 1)
    public.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})  # must return None
    log.append(outcome(public.state_dict))
    return log


def test_state_dict_hooks():
    run_both(state_dict_hooks)


def test_private_hook_registered_twice_is_refused():
    def refused(T):
        def hook(mod, sd, prefix, meta):
            return None
        m = T.nn.Linear(1, 1)
        m.register_state_dict_post_hook(hook)
        return outcome(lambda: m._register_state_dict_hook(hook))
    theirs, ours = (refused(T) for T in FRAMEWORKS)
    assert theirs[0] == "RuntimeError" and ours == theirs


# -- nn.MultiheadAttention's key_padding_mask check ----------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3), (3, 4)])
def test_key_padding_mask_shape_refused_as_torch(shape):
    def program(T):
        m = T.nn.MultiheadAttention(8, 2, batch_first=True)
        q = T.zeros(2, 4, 8)
        return outcome(lambda: m(q, q, q, key_padding_mask=T.zeros(*shape, dtype=T.bool)))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert theirs[0] == "AssertionError" and ours == theirs


# -- torch.testing.assert_close on complex values: torch's tolerances and the modulus of the difference ------------
COMPLEX_CASES = {
    "0-d": lambda T: T.testing.assert_close(T.tensor(1 + 1j), T.tensor(1 + 2j)),
    "within complex64's tolerance": lambda T: T.testing.assert_close(T.tensor([1 + 1j, 2]), T.tensor([1 + 1j, 2 + 1e-7j])),
    "mismatches": lambda T: T.testing.assert_close(T.tensor([1 + 1j, 2, 3j]), T.tensor([1 + 1.1j, 2, 3.5j])),
    "complex128": lambda T: T.testing.assert_close(T.tensor([1 + 1j], dtype=T.complex128),
                                                   T.tensor([1 + 1.0000001j], dtype=T.complex128)),
    "nan": lambda T: T.testing.assert_close(T.tensor([complex(float("nan"), 1)]), T.tensor([complex(float("nan"), 1)])),
    "equal_nan": lambda T: T.testing.assert_close(T.tensor([complex(float("nan"), 1)]),
                                                  T.tensor([complex(1, float("nan"))]), equal_nan=True),
    "exact": lambda T: T.testing.assert_close(T.tensor([1 + 1j, 5]), T.tensor([1 + 1j, 5.001]), rtol=0, atol=0),
    "real against complex": lambda T: T.testing.assert_close(T.tensor([1.0, 2.0]), T.tensor([1 + 0j, 2.5]),
                                                             check_dtype=False),
}


@pytest.mark.parametrize("name", list(COMPLEX_CASES))
def test_assert_close_of_complex_values(name):
    def program(T):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # tidal cast complex differences to integers (a ComplexWarning)
            return outcome(lambda: COMPLEX_CASES[name](T))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert ours == theirs


# -- L-BFGS: torch keeps its scalars as 0-d tensors of the parameters' dtype (float32 arithmetic, not double) --------
def lbfgs_rosenbrock(T, dtype_name: str, line_search, iterations: int):
    p = T.nn.Parameter(T.tensor([-1.5, 2.0, -0.5, 1.2], dtype=getattr(T, dtype_name)))
    opt = T.optim.LBFGS([p], lr=1, max_iter=iterations, history_size=4, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = (100 * (p[1:] - p[:-1] ** 2) ** 2 + (1 - p[:-1]) ** 2).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    state = opt.state_dict()["state"][0]
    kinds = {key: type(state[key]).__name__ for key in ("t", "H_diag", "prev_loss", "func_evals", "n_iter")}
    return [loss, p, sorted(state), kinds, [type(r).__name__ for r in state["ro"]], state["t"], state["H_diag"],
            state["ro"], state["func_evals"]]


@pytest.mark.parametrize("line_search", ["strong_wolfe", None])
def test_lbfgs_state_as_torch(line_search):
    # tidal's state held Python floats computed in double (torch: float32 0-d tensors)
    def program(T):
        return lbfgs_rosenbrock(T, "float32", line_search, 3)
    program.__name__ = "lbfgs"
    run_both(program, rtol=1e-6, atol=1e-7)


def test_lbfgs_float64_iterates():
    def program(T):
        return lbfgs_rosenbrock(T, "float64", "strong_wolfe", 12)
    program.__name__ = "lbfgs"
    run_both(program, rtol=1e-10, atol=1e-12)


def test_scalar_of_a_tensor_requiring_grad_warns_only_with_grad_mode_on():
    from tidal.tensor import tensor as tensor_module
    tensor_module.SCALAR_WARNED.clear()  # torch warns once per process: start from not having warned
    x = tidal_torch.tensor(2.0, requires_grad=True) * 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tidal_torch.no_grad():
            float(x)
        assert caught == []  # torch (and its LBFGS.step, which runs under no_grad) does not warn here
        float(x)
    assert [str(w.message).split("\n")[0] for w in caught] == [
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior."]


# -- torch.autograd.Variable, the pre-0.4 wrapper old programs still call ---------------------------------------------
VARIABLE_CASES = {
    "volatile": lambda T: T.autograd.Variable(T.ones(2), volatile=True).requires_grad,
    "volatile and requires_grad": lambda T: T.autograd.Variable(T.ones(2), requires_grad=True, volatile=True),
    "no data": lambda T: tuple(T.autograd.Variable().shape),
    "a list": lambda T: T.autograd.Variable([1.0]),
    "requires_grad": lambda T: T.autograd.Variable(T.ones(2) * 2, requires_grad=True).is_leaf,
}


@pytest.mark.parametrize("name", list(VARIABLE_CASES))
def test_variable_as_torch(name):
    def program(T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = outcome(lambda: VARIABLE_CASES[name](T))
        return result, [str(w.message) for w in caught]
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert ours == theirs


# -- a singular matrix or one not positive-definite: torch's LinAlgError at the call --------------------------------
SINGULAR_CASES = {
    "inv": lambda T: T.linalg.inv(T.zeros(2, 2)),
    "inv of a batch": lambda T: T.linalg.inv(T.stack([T.eye(3), T.tensor([[1.0, 2, 3], [2, 4, 6], [0, 1, 1]])])),
    "inverse": lambda T: T.inverse(T.zeros(3, 2, 2)),
    "Tensor.inverse": lambda T: T.zeros(2, 2, dtype=T.float64).inverse(),
    "complex inv": lambda T: T.linalg.inv(T.zeros(2, 2, dtype=T.complex64)),
    "solve": lambda T: T.linalg.solve(T.zeros(2, 2), T.ones(2)),
    "solve of a batch": lambda T: T.linalg.solve(T.stack([T.eye(2), T.ones(2, 2)]), T.ones(2, 2, 1)),
    "cholesky": lambda T: T.linalg.cholesky(-T.eye(2)),
    "cholesky of a batch, upper": lambda T: T.linalg.cholesky(T.stack([T.eye(2), T.diag(T.tensor([1.0, -1.0]))]),
                                                             upper=True),
    "torch.cholesky": lambda T: T.cholesky(-T.eye(2)),
}


@pytest.mark.parametrize("name", list(SINGULAR_CASES))
def test_singular_matrices_raise_at_the_call(name):
    def program(T):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.cholesky's deprecation
            try:
                SINGULAR_CASES[name](T)  # tidal found the failure in the kernel and raised at a later sync
            except RuntimeError as exc:  # torch's LinAlgError is a RuntimeError
                return type(exc).__name__.lstrip("_"), str(exc)
        return None
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert theirs is not None and ours == theirs
    assert tidal_torch.linalg.inv(tidal_torch.eye(2) * 2)[0, 0].item() == 0.5  # nothing left pending


# -- warnings torch's C++ gives once per process, in its words -------------------------------------------------------
def _first_warning(T, call) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(T)
        call(T)  # once per process: the second call is silent
    return [str(w.message).split(" (Triggered internally at")[0] for w in caught]


ONCE_CASES = {
    "torch.cholesky": lambda T: T.cholesky(T.eye(2)),
    "torch.qr": lambda T: T.qr(T.eye(2)),
    "istft without a window": lambda T: T.istft(T.stft(T.ones(64), 16, window=T.hann_window(16),
                                                       return_complex=True), 16),
}


def test_warnings_once_as_torch():
    import subprocess
    import sys
    # in a fresh process, as torch warns once per process (each framework keeps its own once-flags)
    script = ("import sys\nsys.path.insert(0, {tests!r})\nimport test_programs_s10 as t\n"
              "for T in t.FRAMEWORKS:\n    print([t._first_warning(T, call) for call in t.ONCE_CASES.values()])")
    done = subprocess.run([sys.executable, "-c", script.format(tests=__file__.rsplit("/", 1)[0])],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    theirs, ours = done.stdout.splitlines()
    assert ours == theirs


def test_new_tensor_of_a_tensor_warns_naming_new_tensor():
    def program(T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            T.ones(2).new_tensor(T.ones(2))
        return [str(w.message) for w in caught]
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert ours == theirs


def test_optimizer_repr_with_groups():
    def program(T):
        first, second = T.nn.Parameter(T.ones(1)), T.nn.Parameter(T.ones(1))
        return repr(T.optim.Adam([{"params": [first]}, {"params": [second], "lr": 0.5}], lr=0.1))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert ours == theirs


# -- losses at the points training meets: zero logits, all targets ignored, a broadcast variance ---------------------
def zero_logit_heads(T):
    # a zero-initialized classifier head gives logits of exactly 0 at the first step: d/dx at 0 is sigmoid(0) - t
    # (tidal's max(-x, 0) + log1p(exp(-|x|)) took a whole unit at the kink: the gradient's sign flipped)
    out = []
    head = T.nn.Linear(4, 3)
    T.nn.init.zeros_(head.weight)
    T.nn.init.zeros_(head.bias)
    x = T.from_numpy(data((5, 4), 0))
    target = T.from_numpy((data((5, 3), 1) > 0).astype(np.float32) * 0.9)
    F = T.nn.functional
    for kwargs in ({}, {"pos_weight": T.tensor([1.0, 2.0, 0.5])}, {"weight": T.tensor([1.0, 0.0, 3.0])},
                   {"reduction": "sum"}):
        head.zero_grad()
        loss = F.binary_cross_entropy_with_logits(head(x), target, **kwargs)
        loss.backward()
        out += [loss, head.weight.grad, head.bias.grad, type(loss.grad_fn).__name__]
    logits = T.tensor([0.0, float("inf"), -float("inf"), 30.0, -30.0, 0.5], requires_grad=True)
    soft = T.full((6,), 0.3, requires_grad=True)
    F.binary_cross_entropy_with_logits(logits, soft, pos_weight=T.full((6,), 2.0)).backward()
    return out + [logits.grad, soft.grad]


def all_ignored(T):
    # a batch whose every target is ignore_index: the mean is 0/0 (nan) but the gradient is 0, not nan
    out = []
    F = T.nn.functional
    logits = T.from_numpy(data((2, 3), 6)).requires_grad_()
    for target in ([1, 1], [1, 0]):
        for kwargs in ({}, {"label_smoothing": 0.2}, {"weight": T.tensor([1.0, 2.0, 3.0])}):
            logits.grad = None
            loss = F.cross_entropy(logits, T.tensor(target), ignore_index=1, **kwargs)
            loss.backward()
            out += [loss, logits.grad]
        logits.grad = None
        F.nll_loss(logits, T.tensor(target), ignore_index=1, weight=T.tensor([0.0, 1.0, 1.0])).backward()
        out.append(logits.grad)
    return out


def gaussian_variances(T):
    out = []
    F = T.nn.functional
    inp = T.from_numpy(data((4, 3), 2)).requires_grad_()
    tgt = T.from_numpy(data((4, 3), 3))
    for shape in ((1, 3), (4, 1), (4,), (3,), (1, 1), (2, 3), (4, 3, 1), ()):
        var = T.from_numpy(data(shape, 4, 0.1, 1)).requires_grad_()
        out.append(outcome(lambda: F.gaussian_nll_loss(inp, tgt, var, reduction="none")))
    out.append(outcome(lambda: F.gaussian_nll_loss(inp, tgt, -0.5, reduction="avg")))
    out.append(outcome(lambda: F.gaussian_nll_loss(inp, tgt, T.ones(2, 3), reduction="avg")))
    return out


@pytest.mark.parametrize("program", [zero_logit_heads, all_ignored, gaussian_variances])
def test_loss_edges(program):
    run_both(program)


def fractional_samples(T):
    out = []
    for spatial, x in ((2, T.rand(2, 3, 5, 7)), (3, T.rand(2, 3, 5, 7, 6))):
        pool = T.nn.FractionalMaxPool2d if spatial == 2 else T.nn.FractionalMaxPool3d
        for shape, dtype in (((2, 3, spatial + 1), "float32"), ((2, 2, spatial), "float32"),
                             ((1, 3, spatial), "float32"), ((3, spatial), "float32"), ((2, 3, spatial), "float64"),
                             ((1, 2, spatial + 1), "float64"), ((3, 3, spatial), "float32")):
            samples = T.rand(*shape).to(getattr(T, dtype))
            for image in (x, x[0]):
                out.append(outcome(lambda: tuple(pool(2, output_ratio=0.5, _random_samples=samples)(image).shape)))
    return out


def test_fractional_max_pool_samples_checked_as_torch():
    run_both(fractional_samples)


def loss_kinks(T):
    # torch's loss kernels count a hinge only where it is positive, and give a regression loss's gradient
    # piecewise: +-1 (or +-delta) at infinite differences, NaN at NaN (tidal's composed pieces gave NaN and 0)
    out = []
    F = T.nn.functional
    scores = T.tensor([[1.0, 0.0, 1.0], [0.0, 0.5, 1.5]], requires_grad=True)
    for kwargs in ({}, {"p": 2, "weight": T.tensor([1.0, 2.0, 3.0])}):
        scores.grad = None
        F.multi_margin_loss(scores, T.tensor([0, 2]), **kwargs).backward()
        out.append(scores.grad)
    scores.grad = None
    F.multilabel_margin_loss(scores, T.tensor([[0, -1, 1], [2, 1, -1]])).backward()
    out.append(scores.grad)
    x = T.tensor([float("nan"), float("inf"), -float("inf"), 0.0, 0.3, -2.0, 1.0], requires_grad=True)
    for name, kwargs in (("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {}), ("huber_loss", {"delta": 0.3}),
                         ("huber_loss", {})):
        for reduction in ("none", "mean"):
            x.grad = None
            loss = getattr(F, name)(x, T.zeros(7), reduction=reduction, **kwargs)
            loss.sum().backward()
            out += [loss, x.grad, type(loss.grad_fn).__name__]
    loss = F.smooth_l1_loss(x, T.zeros(7), beta=0.0)  # torch takes l1_loss's path
    return out + [loss, type(loss.grad_fn).__name__]


def test_loss_kinks():
    run_both(loss_kinks)


EDGE_GRADIENTS = {  # where training meets NaN, infinities and domain ends
    "relu": lambda T, x: T.relu(x),
    "relu_": lambda T, x: T.relu_(x * 1),
    "maximum": lambda T, x: T.maximum(x, T.zeros_like(x)),
    "minimum": lambda T, x: T.minimum(x, T.zeros_like(x)),
    "xlogy at 0": lambda T, x: T.xlogy(x, T.tensor([0.0, 0.0, 2.0, 0.0, 1.0])),
    "logit outside [0, 1]": lambda T, x: T.logit(x),
}


@pytest.mark.parametrize("name", list(EDGE_GRADIENTS))
def test_gradients_at_nan_and_domain_ends(name):
    def program(T):
        x = T.tensor([float("nan"), float("inf"), 1.5, 0.0, -2.0], requires_grad=True)
        EDGE_GRADIENTS[name](T, x).sum().backward()
        return x.grad
    program.__name__ = name
    run_both(program)


BAG_AND_ATTENTION_CASES = {
    "int16 indices with offsets": lambda T: T.nn.functional.embedding_bag(
        T.tensor([1, 0, 2], dtype=T.int16), T.ones(4, 2), T.tensor([0, 2])),
    "int8 2-D indices": lambda T: T.nn.functional.embedding_bag(T.tensor([[1, 0]], dtype=T.int8), T.ones(4, 2)),
    "float offsets": lambda T: T.nn.functional.embedding_bag(T.tensor([1, 0]), T.ones(4, 2), T.tensor([0.0])),
    "float indices": lambda T: T.nn.functional.embedding_bag(T.tensor([1.0, 0.0]), T.ones(4, 2), T.tensor([0])),
    "bool 2-D indices": lambda T: T.nn.functional.embedding_bag(T.tensor([[True, False]]), T.ones(4, 2)),
    "offsets past the end": lambda T: T.nn.functional.embedding_bag(T.tensor([1, 0]), T.ones(4, 2), T.tensor([0, 3])),
    "sdpa head dims": lambda T: T.nn.functional.scaled_dot_product_attention(T.ones(2, 3, 4, 8), T.ones(2, 3, 5, 7),
                                                                             T.ones(2, 3, 5, 6)),
    "sdpa key and value lengths": lambda T: T.nn.functional.scaled_dot_product_attention(
        T.ones(3, 4, 8), T.ones(3, 5, 8), T.ones(3, 4, 6)),
    "sdpa dtypes": lambda T: T.nn.functional.scaled_dot_product_attention(T.ones(2, 4, 8).half(),
                                                                          T.ones(2, 5, 8).bfloat16(), T.ones(2, 5, 6)),
}


@pytest.mark.parametrize("name", list(BAG_AND_ATTENTION_CASES))
def test_bag_and_attention_inputs_as_torch(name):
    def program(T):
        return outcome(lambda: BAG_AND_ATTENTION_CASES[name](T))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    if theirs[0] == "ok":
        assert ours[0] == "ok"
        np.testing.assert_allclose(ours[1].numpy(), theirs[1].numpy())
    else:
        assert ours == theirs


SIZE_CASES = ["s + (4,)", "(1,) + s", "s * 2", "2 * s", "s + s", "x.shape + (1,)", "x.shape[:1] + x.shape[1:]",
              "s + [4]", "s * 1.5"]


def test_size_arithmetic_keeps_size():
    def program(T):
        names = {"s": T.Size([2, 3]), "x": T.ones(2, 3)}
        results = []
        for expression in SIZE_CASES:
            result = outcome(lambda: eval(expression, {}, names))
            results.append((result[0], repr(result[1]).replace("tidal.", "torch.")))
        return results
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert ours == theirs


@pytest.mark.parametrize("dtypes", [("float64", "float32", "float32"), ("float32", "float64", "float64"),
                                    ("float32", "float64", "float32"), ("float32", "float32", "float64")])
def test_linear_dtype_mismatch_names_as_torch(dtypes):
    # torch's addmm checks its self (the bias) against mat2 before mat1: the message names which pair differs
    def program(T):
        weight, inp, bias = (getattr(T, name) for name in dtypes)
        return outcome(lambda: T.nn.functional.linear(T.ones(1, 2, dtype=inp), T.ones(2, 2, dtype=weight),
                                                      T.ones(2, dtype=bias)))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert theirs[0] == "RuntimeError" and ours == theirs


RANDOM_REFUSALS = {  # torch reads a tensor parameter's values at the call; tidal's kernel found them at a later sync
    "bernoulli of p > 1": lambda T: T.bernoulli(T.tensor([1.5, 0.2])),
    "bernoulli of NaN": lambda T: T.bernoulli(T.tensor([float("nan")])),
    "bernoulli_ with a tensor p": lambda T: T.zeros(2).bernoulli_(T.tensor([1.5, 0.2])),
    "normal with a negative std": lambda T: T.normal(T.zeros(2), T.tensor([-1.0, 1.0])),
    "normal with a NaN std": lambda T: T.normal(0.0, T.tensor([float("nan")])),
    "multinomial of zeros": lambda T: T.multinomial(T.tensor([0.0, 0.0]), 1),
    "multinomial of a row of zeros": lambda T: T.multinomial(T.tensor([[0.0, 1.0], [0.0, 0.0]]), 1),
    "multinomial of inf": lambda T: T.multinomial(T.tensor([[1.0, float("inf")]]), 1),
    "multinomial of a negative": lambda T: T.multinomial(T.tensor([-1.0, 2.0]), 1, replacement=True),
    "poisson of a negative rate": lambda T: T.poisson(T.tensor([-1.0])),
}


@pytest.mark.parametrize("name", list(RANDOM_REFUSALS))
def test_random_refusals_at_the_call(name):
    def program(T):
        try:
            RANDOM_REFUSALS[name](T)
        except RuntimeError as exc:
            return str(exc)
        return None
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert theirs is not None and ours == theirs


MODULE_ERRORS = {  # from PyTorch's module database (module_error_inputs): torch refuses, tidal ran on
    "batch norm eps 0 in training": lambda T: T.nn.BatchNorm1d(3, eps=0.0)(T.ones(4, 3)),
    "batch norm eps < 0 in training": lambda T: T.nn.functional.batch_norm(T.ones(4, 3), T.zeros(3), T.ones(3),
                                                                          training=True, eps=-1.0),
    "batch norm eps 0 in eval": lambda T: T.nn.BatchNorm1d(3, eps=0.0).eval()(T.ones(4, 3)).shape,
    "multi margin target size": lambda T: T.nn.MultiMarginLoss()(T.ones(5, 10), T.zeros(3, dtype=T.long)),
    "multi margin 2-D target": lambda T: T.nn.functional.multi_margin_loss(T.ones(5, 10), T.zeros(5, 1, dtype=T.long)),
    "huber complex delta": lambda T: T.nn.HuberLoss(delta=1j),
    "cross entropy probabilities with ignore_index": lambda T: T.nn.CrossEntropyLoss(ignore_index=1)(
        T.ones(2, 3), T.full((2, 3), 1 / 3)),
}


@pytest.mark.parametrize("name", list(MODULE_ERRORS))
def test_module_errors_as_torch(name):
    theirs, ours = (outcome(lambda: MODULE_ERRORS[name](T)) for T in FRAMEWORKS)
    assert ours == theirs


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop", "Rprop", "ASGD", "NAdam",
                                  "RAdam", "Adamax", "LBFGS", "Adafactor", "Muon"])
def test_optimizer_tensor_lr_of_many_elements_refused_as_torch(name):
    # PyTorch's optimizer database: a learning rate given as a tensor must hold one element
    def program(T):
        return outcome(lambda: getattr(T.optim, name)([T.nn.Parameter(T.ones(2, 2))], lr=T.tensor([0.1, 0.2])))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert theirs == ("ValueError", "Tensor lr must be 1-element") and ours == theirs


CTC_CASES = [  # (targets, input lengths, target lengths) for (T=7, N=2, C=5) log-probabilities
    ([[1, 2]] * 2, [8, 6], [2, 2]), ([[1, 2]] * 2, [7, 6], [3, 2]), ([[1, 2]] * 3, [7, 6], [2, 2]),
    ([1, 2, 1], [7, 6], [2, 2]), ([1, 2, 1, 2, 2], [7, 6], [2, 2]), ([[1, 2]] * 2, [-1, 6], [2, 2]),
    ([[1, 2]] * 2, [7, 6], [-1, 2]), ([1, 2], [9, -1], [-1, 3]), ([[1, 2, 3]] * 2, [7, 6], [2, 3]),
]


@pytest.mark.parametrize("case", range(len(CTC_CASES)))
def test_ctc_loss_checks_as_torch(case):
    # torch's ctc_loss_allocate_outputs: targets first (concatenated ones must hold exactly the lengths' sum), then
    # the input lengths, each message naming that function
    def program(T):
        targets, inputs, lengths = CTC_CASES[case]
        log_probs = T.zeros(7, 2, 5).log_softmax(2)
        return outcome(lambda: round(T.nn.functional.ctc_loss(log_probs, T.tensor(targets), T.tensor(inputs),
                                                               T.tensor(lengths)).item(), 4))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert ours == theirs


@pytest.mark.parametrize("mode, dims", [("nearest", 1), ("linear", 1), ("nearest", 2), ("nearest-exact", 2),
                                        ("bilinear", 2), ("bicubic", 2), ("trilinear", 3), ("nearest", 3)])
def test_interpolate_to_an_empty_size_refused_as_torch(mode, dims):
    # a scale factor that rounds a side to 0 (0.3 of 3): torch's upsample kernels refuse it, tidal returned empty
    def program(T):
        x = T.ones((1, 1) + (3,) * dims)
        return [outcome(lambda: tuple(T.nn.functional.interpolate(x, mode=mode, **kwargs).shape))
                for kwargs in ({"scale_factor": 0.3}, {"size": (0,) * dims})]
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert ours == theirs


def test_trunc_normal_with_bounds_reversed_refused_as_torch():
    def program(T):
        return outcome(lambda: T.nn.init.trunc_normal_(T.nn.Parameter(T.empty(3)), a=2.0, b=1.0))
    theirs, ours = (program(T) for T in FRAMEWORKS)
    assert theirs[0] == "RuntimeError" and ours == theirs


def autograd_inputs(T):
    out = []
    w = T.ones(2, requires_grad=True)
    y = w * 3
    out.append(T.autograd.grad(y.exp().sum(), [y, w, y, w]))  # an input given twice gets its gradient twice
    (w * 2).sum().backward(inputs=[w, w])  # ... but accumulates once
    out.append(w.grad)
    w.grad = None
    y = w * 3
    y.retain_grad()
    (y * 2).sum().backward(inputs=[y])  # a retained input: its hook's gradient, not twice
    out += [w.grad, y.grad]
    out.append(outcome(lambda: (w * 2).sum().backward(inputs=[T.ones(2)])))
    return out


def test_repeated_and_retained_inputs():
    run_both(autograd_inputs)


NUMPY_INPUTS = {
    "big-endian from_numpy": lambda T: T.from_numpy(np.arange(3.0).astype(">f8")),
    "big-endian tensor": lambda T: T.tensor(np.arange(3.0).astype(">f8")),
    "big-endian as_tensor": lambda T: T.as_tensor(np.arange(3.0).astype(">f4")),
    "NumPy scalar to from_numpy": lambda T: T.from_numpy(np.float32(3.0)),
}


@pytest.mark.parametrize("name", list(NUMPY_INPUTS))
def test_numpy_inputs_refused_as_torch(name):
    theirs, ours = (outcome(lambda: NUMPY_INPUTS[name](T)) for T in FRAMEWORKS)
    assert theirs[0] != "ok" and ours == theirs


ACTIVATION_EDGES = {  # torch's backward formulas where the composed pieces disagree: NaN, infinities, seams
    "elu": lambda T, x: T.nn.functional.elu(x, 0.7),
    "selu": lambda T, x: T.nn.functional.selu(x),
    "celu": lambda T, x: T.nn.functional.celu(x, 1.3),
    "softplus": lambda T, x: T.nn.functional.softplus(x),
    "softplus beta": lambda T, x: T.nn.functional.softplus(x, 2.0, 5.0),
    "hardsigmoid": lambda T, x: T.nn.functional.hardsigmoid(x),
    "hardswish": lambda T, x: T.nn.functional.hardswish(x),
    "softshrink": lambda T, x: T.nn.functional.softshrink(x, 0.5),
}


@pytest.mark.parametrize("name", list(ACTIVATION_EDGES))
def test_activation_gradients_at_edges(name):
    def program(T):
        x = T.tensor([float("nan"), float("inf"), -float("inf"), -3.0, 3.0, 0.0, 0.5, -0.5, 1.7], requires_grad=True)
        y = ACTIVATION_EDGES[name](T, x)
        y.sum().backward()
        return [y, x.grad, type(y.grad_fn).__name__]
    program.__name__ = name
    run_both(program)

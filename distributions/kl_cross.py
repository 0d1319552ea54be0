"""KL divergences between different families (and the Bregman form for two members of one exponential family).
Pairs whose supports do not nest are infinite."""
from __future__ import annotations

import math

from .. import autograd
from .. import ops
from ..autograd import enable_grad
from .continuous import Beta, Exponential, Gamma, Laplace, Normal, Uniform
from .counts import Binomial, Poisson
from .discrete import Bernoulli
from .exp_family import ExponentialFamily
from .kl import _EULER_GAMMA, _infinite_like, register_kl
from .transformed import Gumbel
from .transformed_families import Pareto
from .utils import _sum_rightmost

__all__: list = []


def _inf_where(mask, result):
    """result, infinite where mask holds."""
    return ops.where(mask, _infinite_like(result), result)


def _x_log_x(x):
    return ops.xlogy(x, x)  # 0 at x = 0


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer between the natural parameters."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot "
                                  + " " * 28 + "be computed using Bregman divergences")
    p_nparams = [n.detach().requires_grad_() for n in p._natural_params]
    q_nparams = q._natural_params
    with enable_grad():
        lg_normal = p._log_normalizer(*p_nparams)
        gradients = autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


# supports that do not nest: p puts mass where q has none
_INFINITE = {Beta: ("concentration1", (Pareto,)), Exponential: ("rate", (Beta, Pareto, Uniform)),
             Gamma: ("concentration", (Beta, Pareto, Uniform)),
             Gumbel: ("loc", (Beta, Exponential, Gamma, Pareto, Uniform)),
             Laplace: ("loc", (Beta, Exponential, Gamma, Pareto, Uniform)),
             Normal: ("loc", (Beta, Exponential, Gamma, Pareto, Uniform)), Pareto: ("scale", (Beta, Uniform)),
             Poisson: ("rate", (Bernoulli, Binomial))}


def _infinite(param: str):
    def kl(p, q):
        return _infinite_like(getattr(p, param))
    return kl


for _p_type, (_param, _q_types) in _INFINITE.items():
    for _q_type in _q_types:
        register_kl(_p_type, _q_type)(_infinite(_param))


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    total = p.concentration1 + p.concentration0
    e_log_x = p.concentration1.digamma() - total.digamma()
    return (-p.entropy() + q.concentration.lgamma() - q.concentration * q.rate.log()
            - (q.concentration - 1) * e_log_x + q.rate * p.concentration1 / total)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    total = p.concentration1 + p.concentration0
    mean = p.concentration1 / total
    var_normal = q.scale.pow(2)
    second_moment = mean * (1 - mean) / (total + 1) + mean.pow(2)
    return (-p.entropy() + 0.5 * (var_normal * 2 * math.pi).log()
            + (0.5 * second_moment - q.loc * mean + 0.5 * q.loc.pow(2)) / var_normal)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    prod = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    return prod.log() - 1 - loc_ratio + ops.exp(loc_ratio) * prod / (prod + 1) + prod.reciprocal()


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    prod = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t1 = (p.concentration - 1) * p.concentration.digamma() - p.concentration.lgamma() - p.concentration
    t2 = prod.log() + p.concentration / prod
    t3 = ops.exp(loc_ratio) * (1 + prod.reciprocal()).pow(-p.concentration) - loc_ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    var_normal = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    t1 = 0.5 * ops.log(rate_sq * var_normal * 2 * math.pi) - p.concentration - p.concentration.lgamma()
    t2 = 0.5 * (p.concentration.pow(2) + p.concentration) / rate_sq
    t3 = q.loc * p.concentration / p.rate
    return t1 + (p.concentration - 1) * p.concentration.digamma() + (t2 - t3 + 0.5 * q.loc.pow(2)) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER_GAMMA + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var_normal = q.scale.pow(2)
    ratio = p.scale.pow(2) / var_normal
    t1 = 0.5 * ops.log(2 * ratio / math.pi)
    return -t1 + ratio + (0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)) / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_ratio = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    t3 = ops.exp(-mean_ratio + 0.5 * var_ratio + loc_ratio)
    return -0.5 * var_ratio.log() + mean_ratio - loc_ratio + t3 - 0.5 * (1 + math.log(2 * math.pi))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    prod = p.scale * q.rate
    result = (p.alpha / prod).log() - p.alpha.reciprocal() + p.alpha * prod / (p.alpha - 1) - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _inf_where(p.alpha <= 1, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    return _inf_where(p.alpha <= 2, t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    result = t3 + t4 - ops.log(width) - t2
    return _inf_where((p.high > q.support.upper_bound) | (p.low < q.support.lower_bound), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = -width.log() + t2 + t3 + q.rate * (p.high + p.low) / 2
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    common = q.scale / (p.high - p.low)
    high_diff = (p.high - q.loc) / q.scale
    low_diff = (p.low - q.loc) / q.scale
    return common.log() + 0.5 * (high_diff + low_diff) - common * (ops.exp(-high_diff) - ops.exp(-low_diff))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)

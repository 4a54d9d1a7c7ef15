"""The text test for calls named like densities (`amplint.densitynames.may_call_density`), a prefilter of
project mode: a file it misses is never read for AMP003, so it must pass every call `is_density_name`
accepts; it may pass more."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplint.densitynames import CALL_TEXT, is_density_name, may_call_density


@pytest.mark.parametrize("text", [
    "posterior.kl(prior)", "kl (p, q)", "x = kl_div(p)", "normal_kl(mean1, logvar1)", "self._likelihood(x)",
    "loss = nll(x)", "F.nll_loss(x, y)", "model.log_prob(x)", "m.logprobs(x)", "log_p_x(z)", "m.log_density(x)",
    "m.logpdf(x)", "m.log_posterior(z)", "prior.log_prior(z)", "discretized_gaussian_log_likelihood(\n x)",
])
def test_calls_named_like_densities_pass(text: str) -> None:
    assert may_call_density(text)


@pytest.mark.parametrize("text", [
    "skl(x)", "Okl(x)", "logger.info(x)", "logging(x)", "kl = 1", "log_prob", "nll", "self.kl_weight * x",
    "# the kl term", "catalog(x)", "likelihood",
])
def test_other_text_does_not(text: str) -> None:
    assert not may_call_density(text)


@pytest.mark.parametrize("name", [
    "kl", "_likelihood", "normal_kl", "log_prob", "log_probs", "logprob", "log_p", "logp", "log_likelihood",
    "log_density", "log_pdf", "nll", "log_posterior", "log_prior", "discretized_gaussian_log_likelihood",
])
def test_every_density_name_called_passes(name: str) -> None:
    assert is_density_name(name) and may_call_density(f"y = obj.{name}(x)") and may_call_density(f"{name}(x)")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "log", "_", "p", "prob", "s", "likelihood", "density", "pdf", "posterior", "prior", "nll", "k", "l", "ak",
    "(", " ", "\n", ".", "x", "=",
]), max_size=12).map("".join))
def test_the_word_test_keeps_every_call_the_regex_finds(text: str) -> None:
    """`may_call_density` tests words before CALL_TEXT: no text the regex matches may fail the words."""
    assert may_call_density(text) == bool(CALL_TEXT.search(text))

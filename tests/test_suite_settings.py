"""The suite's own settings: the Hypothesis profile CI runs with."""

from conftest import hypothesis_profile
from hypothesis import settings


def test_ci_profile_is_derandomized_without_a_database():
    ci = settings.get_profile("ci")
    assert ci.derandomize is True and ci.database is None


def test_the_profile_follows_ci_and_can_be_named():
    assert hypothesis_profile({"CI": "true"}) == "ci"
    assert hypothesis_profile({"CI": "1"}) == "ci"
    assert hypothesis_profile({}) == "dev" and hypothesis_profile({"CI": "false"}) == "dev"
    assert hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}) == "dev"

"""Test-run settings shared by every test directory.

No test reaches the network: HuggingFace libraries (``tokenizers`` / ``transformers``,
installed for the tokenizer-counter tests) are told they are offline before anything
imports them, so code that would download a tokenizer (LangChain's GPT-2 fallback
counter) fails at once instead of retrying for half a minute.

Hypothesis profiles: ``dev`` (the default) runs a tenth of the examples, for a quick
edit-test loop; ``ci`` runs the full counts and is what ``.ci/run`` uses. Choose one
with ``--hypothesis-profile=ci`` or ``CUPEL_HYPOTHESIS_PROFILE=ci``. A test that needs
more (or fewer) examples than the profile's default says so as CI's count,
``@settings(max_examples=examples(400))`` (``tests/hypothesis_profiles.py``), which
every profile scales by the same factor.

Slow tests (real processes, the documentation build, the browser, hash-seed runs, the
benchmarks' quick runs, the thousand-conversation leak checks) carry ``@pytest.mark.slow``:
the README's command leaves them out (``-m "not slow"``), ``.ci/run`` runs them.
"""

import os

from hypothesis import settings
from hypothesis_profiles import CI_EXAMPLES, DEV_EXAMPLES

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

settings.register_profile("ci", max_examples=CI_EXAMPLES)
settings.register_profile("dev", max_examples=DEV_EXAMPLES)
# --hypothesis-profile (hypothesis' pytest plugin) loads its profile after this.
settings.load_profile(os.environ.get("CUPEL_HYPOTHESIS_PROFILE", "dev"))

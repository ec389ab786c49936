"""Every ``>>>`` example in a docstring of the server or the Python client runs, as a doctest.

Docstrings are documentation too: an example that no longer holds is a documented
behaviour that differs from the code. The modules are found by walking both packages,
so a new module's examples are run without being listed here.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType

import pytest

import ziggurat
import ziggurat_client


def _modules(package: ModuleType) -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")
        # generated protobuf code has no examples of ours and imports nothing else
        if ".v1." not in f"{info.name}." and not info.name.endswith(".__main__")
    )


MODULES = _modules(ziggurat) + _modules(ziggurat_client)
FINDER = doctest.DocTestFinder()


def _examples(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    return [test for test in FINDER.find(module, name) if test.examples]


WITH_EXAMPLES = [name for name in MODULES if _examples(name)]


def test_the_packages_have_docstring_examples_to_run() -> None:
    """The walk finds the modules known to carry examples (it cannot silently find none)."""
    assert "ziggurat.core.tokens" in WITH_EXAMPLES
    assert "ziggurat.rules.core" in WITH_EXAMPLES


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_hold(name: str) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in _examples(name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (see output)"

"""The distribution as users get it: a wheel named ``cupel-context`` with the three
import packages, the ``cupel`` command, the shipped data and the declared extras.

The fresh-virtualenv installs reach the package index and take a minute or two, so they
carry the ``packaging`` marker: the default run deselects them and ``.ci/run`` runs them
(``pytest -m packaging tests/packaging``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import cupel

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / ".ci" / "constraints.txt"
NAME = "cupel-context"
EXTRAS = ("langchain", "langchain-agents", "llamaindex", "otel", "all", "docs", "dev")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the source tree (the checkout stays clean)."""
    work = tmp_path_factory.mktemp("build")
    source = work / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "site", "*.egg-info", "__pycache__", ".*_cache"
        ),
    )
    out = work / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (built,) = out.glob("*.whl")
    return built


def metadata(wheel: Path) -> tuple[dict[str, list[str]], list[str]]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        message = Parser().parsestr(zf.read(meta_name).decode())
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return fields, names


@pytest.mark.slow
def test_the_wheel_is_named_cupel_context(wheel: Path) -> None:
    assert wheel.name == f"cupel_context-{cupel.__version__}-py3-none-any.whl"
    fields, _ = metadata(wheel)
    assert fields["Name"] == [NAME]
    assert fields["Version"] == [cupel.__version__]


@pytest.mark.slow
def test_the_wheel_holds_the_packages_the_command_and_the_data(wheel: Path) -> None:
    _, names = metadata(wheel)
    for path in (
        "cupel/__init__.py",
        "cupel/__main__.py",
        "cupel/cli/__init__.py",
        "cupel/policy/__init__.py",
        "cupel/_pipeline/__init__.py",
        "cupel/py.typed",
        "cupel/data/demo_chat.jsonl",
        "cupel/data/report.css",
        "cupel_langchain/__init__.py",
        "cupel_langchain/py.typed",
        "cupel_llamaindex/__init__.py",
        "cupel_llamaindex/py.typed",
    ):
        assert path in names, path
    assert not [n for n in names if n.startswith(("tests/", "docs/", "benchmarks/"))]
    with zipfile.ZipFile(wheel) as zf:
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "cupel = cupel.cli:main" in zf.read(entry_points).decode()


@pytest.mark.slow
def test_extras_declare_major_version_ranges_not_build_environment_caps(wheel: Path) -> None:
    fields, _ = metadata(wheel)
    assert set(EXTRAS) <= set(fields["Provides-Extra"])
    requires = fields["Requires-Dist"]

    def spec(name: str, extra: str | None = None) -> str:
        marker = f'; extra == "{extra}"' if extra else ""
        found = [
            r
            for r in requires
            if r.split(";")[0].split("[")[0].split("<")[0].split(">")[0].strip() == name
            and r.endswith(marker)
            and (extra or ";" not in r)
        ]
        assert len(found) == 1, (name, extra, requires)
        return found[0]

    assert "<2" in spec("langchain-core", "langchain") and ">=1.0" in spec(
        "langchain-core", "langchain"
    )
    assert "<2" in spec("langchain", "langchain-agents")
    assert "<0.15" in spec("llama-index-core", "llamaindex")
    assert "<1.8" not in " ".join(requires) and "<1.5" not in " ".join(requires)
    # The extras that build on others name this distribution, not the taken "cupel".
    assert any(r.startswith(f"{NAME}[langchain]") for r in requires)
    assert not any(r.startswith("cupel[") or r.startswith("cupel ") for r in requires)
    # The progress library the CLI uses is a plain dependency.
    assert any(r.startswith("tqdm") and ";" not in r for r in requires)


def test_ci_pins_every_dependency_it_installs() -> None:
    pins = [
        line
        for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert all("==" in line for line in pins), [p for p in pins if "==" not in p]
    pinned = {line.split("==")[0].lower().replace("_", "-") for line in pins}
    for name in (
        "langchain-core",
        "langchain",
        "llama-index-core",
        "tqdm",
        "mkdocs",
        "mkdocs-material",
        "mkdocstrings-python",
        "pydantic",
        "numpy",
    ):
        assert name in pinned, name
    assert NAME not in pinned and "cupel" not in pinned


# -- fresh virtualenvs (network: the package index) ------------------------------------------
def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin"


def _pip_install(bin_dir: Path, requirement: str) -> None:
    proc = subprocess.run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            requirement,
            "-c",
            str(CONSTRAINTS),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "does not provide the extra" not in proc.stderr, proc.stderr


def _python(bin_dir: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "python"), "-c", code], capture_output=True, text=True, check=False
    )


@pytest.mark.slow
@pytest.mark.packaging
def test_a_fresh_virtualenv_installs_the_wheel_with_each_extra(wheel: Path, tmp_path: Path) -> None:
    bin_dir = _venv(tmp_path / "venv")
    _pip_install(bin_dir, str(wheel))
    version = subprocess.run(
        [str(bin_dir / "cupel"), "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout == f"cupel {cupel.__version__}\n"
    demo = subprocess.run(
        [str(bin_dir / "python"), "-m", "cupel", "demo"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert demo.stdout.startswith("cupel demo: 421 messages in 273 units")
    # Without the extra, the adapter is not importable (langchain-core is not installed).
    assert _python(bin_dir, "import cupel_langchain").returncode != 0

    checks = {
        "langchain": "import cupel_langchain, langchain_core; print(cupel_langchain.__name__)",
        "langchain-agents": "from cupel_langchain import CupelContextMiddleware; "
        "import langchain.agents",
        "llamaindex": "import cupel_llamaindex, llama_index.core",
        "otel": "import cupel.otel, opentelemetry.sdk",
        "docs": "import mkdocs, material, mkdocstrings_handlers.python",
    }
    for extra, code in checks.items():
        _pip_install(bin_dir, f"{wheel}[{extra}]")
        proc = _python(bin_dir, code)
        assert proc.returncode == 0, (extra, proc.stderr[-2000:])
    freeze = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    installed = freeze.replace("cupel_context", NAME).splitlines()
    assert any(line.startswith(f"{NAME} @ file://") for line in installed), freeze
    assert "\ncupel==" not in f"\n{freeze}"  # never the other project called cupel

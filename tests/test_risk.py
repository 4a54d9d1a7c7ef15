"""`risk` on findings: measured per device from amplint/data/hazards.json, in JSON, SARIF, text and --min-risk."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from amplint.cli import main
from amplint.engine import check_source
from amplint.model import Finding
from amplint.risk import load_table

HEAD = "import torch\nimport torch.nn.functional as F\nfrom torch.distributions import Laplace, Normal\n\n\n"


def _findings(body: str) -> List[Finding]:
    result = check_source(HEAD + textwrap.dedent(body), "case.py")
    assert result.error is None
    return result.findings


def _one(body: str) -> Finding:
    [finding] = _findings(body)
    assert finding.risk is not None
    assert finding.message.endswith("; " + finding.risk.text())
    return finding


def _rows(dist: str, method: str, scale_code: str) -> List[dict]:
    return [row for row in load_table()["rows"] if row["dist"] == dist and row["method"] == method
            and "skipped" not in row and "value" not in row and f"scale={scale_code}" in row["params"]]


LAPLACE_SIGMOID = """
    def loss(model, x, y):
        with torch.autocast("{device}", dtype=torch.float16):
            loc, h = model(x).chunk(2, -1)
            return -Laplace(loc, 1e-3 * torch.sigmoid(h)).log_prob(y).mean()
"""
NORMAL_EXP = """
    def loss(model, x, y):
        with torch.autocast("{device}", dtype=torch.float16):
            mu, log_sigma = model(x).chunk(2, -1)
            return -Normal(mu, log_sigma.exp()).log_prob(y).mean()
"""


def test_laplace_with_sigmoid_scale_is_high_on_cuda_and_cpu() -> None:
    """The issue's case: its division runs in float16 under CUDA's policy too."""
    [row] = _rows("Laplace", "log_prob", "1e-3 * torch.sigmoid(scale_head)")
    for device, column in (("cuda", "cuda-emulated"), ("cpu", "cpu")):
        finding = _one(LAPLACE_SIGMOID.format(device=device))
        cell = row[column]
        assert cell["neg_inf"] > 0
        assert finding.risk.level == "high" and finding.risk.device == device and finding.risk.measured_as == column
        assert finding.risk.text() == (f"risk high on {device.upper()}: {cell['neg_inf']:,} of {row['rows']:,} -inf "
                                       f"measured ({row['regime']})")


def test_normal_with_exp_scale_is_low_on_cuda_high_on_cpu() -> None:
    """CUDA runs pow/log/exp in float32; CPU autocast does not."""
    cuda = _one(NORMAL_EXP.format(device="cuda"))
    cpu = _one(NORMAL_EXP.format(device="cpu"))
    rows = _rows("Normal", "log_prob", "torch.exp(scale_head)")
    assert len(rows) == 2 and all(r["cuda-emulated"]["neg_inf"] + r["cuda-emulated"]["nan"] == 0 for r in rows)
    assert cuda.risk.level == "low" and cuda.risk.text().startswith(
        "risk low on CUDA: all 2 measured regimes finite in float16, max relative error ")
    worst = max(rows, key=lambda r: r["cpu"]["neg_inf"] + r["cpu"]["nan"])
    assert cpu.risk.level == "high" and cpu.risk.nonfinite == worst["cpu"]["neg_inf"] + worst["cpu"]["nan"] > 0


def test_unknown_when_device_dtype_or_class_is_not_known() -> None:
    not_literal = _one("""
        def loss(model, x, y, device):
            with torch.autocast(device, dtype=torch.float16):
                mu, s = model(x).chunk(2, -1)
                return Normal(mu, s.exp()).log_prob(y)
    """)
    assert not_literal.risk.level == "unknown" and "device is not a literal" in not_literal.risk.detail
    maybe = _one("""
        def loss(model, x, y, dtype):
            with torch.autocast("cuda", dtype=dtype):
                mu, s = model(x).chunk(2, -1)
                return Normal(mu, s.exp()).log_prob(y)
    """)
    assert maybe.risk.level == "unknown" and "dtype" in maybe.risk.detail
    elsewhere = _one("""
        def loss(dist, y):
            with torch.autocast("cuda", dtype=torch.float16):
                return dist.log_prob(y)
    """)
    assert elsewhere.risk.level == "unknown" and "cannot see" in elsewhere.risk.detail


def test_amp002_is_measured_without_promotion() -> None:
    """autocast(enabled=False) without a cast: float16 inputs, no op promoted, on any device."""
    finding = _one("""
        def loss(model, x, y):
            with torch.autocast("cuda", dtype=torch.float16):
                mu, s = model(x).chunk(2, -1)
                scale = s.exp()
                with torch.autocast("cuda", enabled=False):
                    return Normal(mu, scale).log_prob(y)
    """)
    assert finding.code == "AMP002"
    assert finding.risk.level == "high" and finding.risk.measured_as == "cpu" and finding.risk.disabled
    assert finding.risk.text().startswith("risk high on CUDA (autocast disabled): ")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(HEAD + textwrap.dedent(LAPLACE_SIGMOID.format(device="cuda")), encoding="utf-8")
    (tmp_path / "b.py").write_text(HEAD + textwrap.dedent(NORMAL_EXP.format(device="cuda")), encoding="utf-8")
    (tmp_path / "c.py").write_text(HEAD + textwrap.dedent("""
        def loss(dist, y):
            with torch.autocast("cuda", dtype=torch.float16):
                return dist.log_prob(y)
    """), encoding="utf-8")
    return tmp_path


def _json(capsys, *argv: str) -> list:
    main(["check", "--format", "json", *argv])
    return json.loads(capsys.readouterr().out)


def test_json_sarif_and_min_risk(project: Path, capsys) -> None:
    every = _json(capsys, str(project))
    assert sorted((Path(f["path"]).name, f["risk"]["level"]) for f in every) == [
        ("a.py", "high"), ("b.py", "low"), ("c.py", "unknown")]
    # unknown is on no rung of the order: a threshold keeps it, --hide-unknown drops it
    assert [Path(f["path"]).name for f in _json(capsys, "--min-risk", "low", str(project))] == ["a.py", "b.py",
                                                                                              "c.py"]
    assert [Path(f["path"]).name for f in _json(capsys, "--min-risk", "high", str(project))] == ["a.py", "c.py"]
    assert [Path(f["path"]).name for f in _json(capsys, "--min-risk", "low", "--hide-unknown", str(project))] == [
        "a.py", "b.py"]
    assert [Path(f["path"]).name for f in _json(capsys, "--min-risk", "high", "--hide-unknown", str(project))] == [
        "a.py"]
    main(["check", "--format", "sarif", str(project)])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    levels = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1]:
              (r["level"], r["properties"]["risk"]["level"]) for r in results}
    assert levels == {"a.py": ("error", "high"), "b.py": ("note", "low"), "c.py": ("warning", "unknown")}


def test_min_risk_high_exits_clean_when_only_low_risk_remains(project: Path, capsys) -> None:
    (project / "a.py").unlink()
    assert main(["check", "--min-risk", "high", "--hide-unknown", str(project)]) == 0
    assert "Found 0 findings." in capsys.readouterr().out


def test_risk_needs_no_torch(project: Path) -> None:
    code = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # any import of torch raises
        from amplint.engine import check_file
        print(check_file({str(project / 'a.py')!r}).findings[0].risk.level)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "high"


def test_probs_from_softmax_and_logits_are_told_apart() -> None:
    """On CPU, float16 softmax probabilities fail Categorical's simplex check; the same logits are fine."""
    probs = [r for r in load_table()["rows"] if r["dist"] == "Categorical" and r["method"] == "log_prob"
             and "skipped" not in r and "value" not in r and r["transforms"] == {"probs": "softmax"}]
    assert probs and probs[0]["cpu"]["error"].startswith("ValueError")
    body = """
        from torch.distributions import Categorical

        def loss(model, x, y):
            with torch.autocast("cpu", dtype=torch.float16):
                return Categorical({arg}).log_prob(y)
    """
    high = _one(body.format(arg="probs=torch.softmax(model(x), -1)"))
    low = _one(body.format(arg="logits=model(x)"))
    assert high.risk.level == "high" and high.risk.text().startswith("risk high on CPU: raises ValueError")
    assert low.risk.level == "low"


def test_a_cast_value_reads_the_rows_measured_with_a_float32_value() -> None:
    """`Laplace(...).log_prob(y.float())` divides |value - loc| by the scale in float32 and stays finite, where a
    float16 value gives -inf: the risk reads the rows measured with the value cast, as `amplint verify` runs it.
    `Normal` with small scales is -inf either way (its variance underflows in float16)."""
    laplace = [row for row in load_table()["rows"] if row["dist"] == "Laplace" and row["method"] == "log_prob"
               and row.get("value") == "float32" and "1e-3 * torch.sigmoid" in row["params"]]
    assert [row["cpu"]["neg_inf"] for row in laplace] == [0]
    cast = _one(LAPLACE_SIGMOID.format(device="cpu").replace("log_prob(y)", "log_prob(y.float())"))
    assert cast.risk.level == "low" and cast.risk.detail.endswith(", the value cast to float32")
    uncast = _one(LAPLACE_SIGMOID.format(device="cpu"))
    assert uncast.risk.level == "high" and "value cast" not in uncast.risk.detail
    normal = _one(NORMAL_EXP.format(device="cpu").replace("log_prob(y)", "log_prob(y.float())"))
    assert normal.risk.level == "high" and normal.risk.detail.endswith(", the value cast to float32)")


@pytest.mark.torch
def test_check_and_verify_agree_on_the_value_as_written(tmp_path: Path) -> None:
    """`check`'s risk and `verify`'s run read the same value: `high` and confirmed with the value as a float16
    head gives it, `low` and not reproduced with the value cast."""
    body = LAPLACE_SIGMOID.format(device="cpu")
    (tmp_path / "case.py").write_text(HEAD + textwrap.dedent(body) + textwrap.dedent(
        body.replace("def loss(", "def loss_cast(").replace("log_prob(y)", "log_prob(y.float())")))

    def run(*args: str) -> list:
        done = subprocess.run([sys.executable, "-m", "amplint", *args, "--format", "json", "case.py"],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
        return json.loads(done.stdout)

    risks = [(f["line"], f["risk"]["level"]) for f in run("check", "--no-project")]
    verdicts = [(r["line"], r["verdict"]) for r in run("verify", "--timing-runs", "0", "--batch", "4096")]
    assert risks == [(10, "high"), (15, "low")]
    assert verdicts == [(10, "confirmed"), (15, "not-reproduced")]

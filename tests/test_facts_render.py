"""The facts table a person reads, rendered to text from captured outputs."""

from __future__ import annotations

from pathlib import Path

from accelstack.facts import parse_sections
from accelstack.facts.render import facts_table
from accelstack.results.output import render_to_text

CAPTURES = Path(__file__).parent / "data" / "captures"


def test_ascend_host_table_names_driver_firmware_cann_and_npus() -> None:
    facts = parse_sections(
        {"npu_smi": (CAPTURES / "npu_smi_info_910b3_a2_25.2.0.txt").read_text(), "hostname": "npu01"},
        {"/usr/local/Ascend/driver/version.info": (CAPTURES / "ascend_driver_version_25.0.rc1.1.txt").read_text(),
         "/usr/local/Ascend/firmware/version.info":
             (CAPTURES / "ascend_firmware_version_7.7.0.1.231.txt").read_text()},
    )
    text = render_to_text(facts_table("npu01", facts))
    assert "driver 25.0.rc1.1" in text
    assert "firmware 7.7.0.1.231" in text
    assert "8 NPU(s): 910B3" in text
    assert "torch" in text and "not installed in the stack python" in text


def test_nvidia_host_table_names_driver_and_gpus() -> None:
    facts = parse_sections({"nvidia_smi": (CAPTURES / "nvidia_smi_query_h100_590.48.01.csv").read_text()}, {})
    text = render_to_text(facts_table("gpu01", facts))
    assert "driver 590.48.01" in text and "GPU(s): NVIDIA H100" in text


def test_h100_table_shows_both_nccls_the_system_one_and_the_one_torch_loads() -> None:
    from accelstack.flows.bundle.run import bundle_facts

    facts = bundle_facts(Path(__file__).parent / "data" / "h100" / "bundle")
    text = render_to_text(facts_table("h100", facts))
    assert "system NCCL 2.28.3" in text
    assert "2.11.0+cu130 (CUDA 13.0), loads NCCL 2.28.9" in text

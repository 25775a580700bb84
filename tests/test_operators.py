"""Operator families of torch_npu's MoE kernels (core/operators.py alias table)."""

from __future__ import annotations

import pytest

from opprof_advisor.core.operators import canonical_family


@pytest.mark.parametrize("op_type, family", [
    ("MoeDistributeDispatchV2", "AlltoAll"), ("MoeDistributeCombine", "AlltoAll"), ("MoeGatingTopKSoftmax", "TopK"),
    ("MoeGatingTopK", "TopK"), ("MoeInitRoutingV2", "Gather"), ("MoeTokenPermute", "Gather"),
    ("MoeFinalizeRouting", "Gather"),
])
def test_moe_kernels_belong_to_the_families_their_kb_entries_name(op_type, family):
    """torch_npu's MoE kernels: dispatch / combine exchange tokens between ranks (communication), gating picks the
    top-k experts, routing gathers tokens into expert order and back."""
    assert canonical_family(op_type) == family

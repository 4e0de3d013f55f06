"""Which earlier graded functions each lesson hands out: a working answer, given in its notebook.

Later lessons build on earlier ones, and most give the functions they build on ready-made: Lesson 2
defines Lesson 1's `softmax`, Lesson 12 Lesson 11's `layer_norm` and its backward. Each such
function is a working answer to the earlier lesson's exercise, so `make dist` publishes the later
lesson only once that exercise's deadline has passed (grader/authoring/dist_steps.py).

HANDOUTS is the one place this is declared: lesson -> the hand-outs of its released notebook, each
the earlier lesson, the grade_id of the test cell whose exercise it answers, and the name the
function has in the later lesson's notebook (not always the exercise's: Lesson 7's
`attention_forward` is Lesson 2's `scaled_dot_product_attention`). A function counts when it passes
that exercise's hidden checks, or gives the same main result on every case (the layer's output
without the exercise's cache or its input validation). tests/unit/test_handouts.py runs every
earlier lesson's hidden checks against every function of every released notebook and fails, naming
the entry to add or remove, when this table and the notebooks disagree.
"""

from __future__ import annotations

from typing import NamedTuple


class Handout(NamedTuple):
    """A working answer to an earlier lesson's exercise that a later lesson gives in its notebook."""

    lesson: str  # the earlier lesson, whose exercise it answers
    grade_id: str  # the test cell of that exercise
    function: str  # its name in the later lesson's notebook


L01, L02, L03 = "01-single-head", "02-scaling", "03-parallel-heads"
L06, L07, L09, L11 = "06-causal-masks", "07-backward-pass", "09-learning", "11-transformer-block"
SOFTMAX = Handout(L01, "test_softmax", "softmax")
LAYER = Handout(L03, "test_multi_head_attention_forward", "multi_head_attention_forward")

HANDOUTS: dict[str, list[Handout]] = {
    "02-scaling": [SOFTMAX],
    "03-parallel-heads": [SOFTMAX, Handout(L01, "test_attention", "attention")],
    "04-output-projection": [SOFTMAX, LAYER],
    "05-pytorch-module": [SOFTMAX, LAYER],
    "06-causal-masks": [SOFTMAX, Handout(L03, "test_split_heads", "split_heads"), LAYER],
    "07-backward-pass": [SOFTMAX, Handout(L02, "test_scaled_dot_product_attention", "attention_forward"),
                         Handout(L03, "test_multi_head_attention_forward", "mha_forward")],
    "08-position": [SOFTMAX],
    "09-learning": [SOFTMAX, LAYER],
    "10-attention-cost": [SOFTMAX, Handout(L02, "test_scaled_dot_product_attention", "attention"),
                          Handout(L02, "test_scaled_dot_product_attention", "attention_with_lse"),
                          Handout(L07, "test_attention_backward", "attention_backward")],
    "11-transformer-block": [SOFTMAX, LAYER, Handout(L06, "test_causal_mask", "causal_mask")],
    "12-induction-gpt": [SOFTMAX, Handout(L03, "test_split_heads", "split_heads"),
                         Handout(L09, "test_cross_entropy_and_grad", "cross_entropy"),
                         Handout(L09, "test_adam_step", "adam_step"),
                         Handout(L11, "test_layer_norm", "layer_norm"),
                         Handout(L11, "test_layer_norm_backward", "layer_norm_backward"),
                         Handout(L11, "test_gelu", "gelu")],
    "13-cross-attention": [SOFTMAX, Handout(L03, "test_split_heads", "split_heads"),
                           Handout(L09, "test_adam_step", "adam_step"),
                           Handout(L11, "test_layer_norm", "layer_norm"),
                           Handout(L11, "test_layer_norm_backward", "layer_norm_backward")],
    "14-long-context": [SOFTMAX, Handout(L06, "test_causal_mask", "causal_mask"),
                        Handout("08-position", "test_sinusoidal_encoding", "sinusoidal_encoding"),
                        Handout("08-position", "test_apply_rope", "rope")],
    "15-latent-and-linear": [SOFTMAX, Handout("08-position", "test_apply_rope", "rope")],
    "16-decoding": [SOFTMAX, Handout(L03, "test_split_heads", "split_heads"),
                    Handout(L09, "test_adam_step", "adam_step"),
                    Handout(L11, "test_layer_norm", "layer_norm"),
                    Handout(L11, "test_layer_norm_backward", "layer_norm_backward"),
                    Handout("13-cross-attention", "test_cross_attention", "cross_attention"),
                    Handout("13-cross-attention", "test_decoder_block", "decoder_block"),
                    Handout("13-cross-attention", "test_decoder_step", "decoder_step")],
}


def handouts(lesson: str) -> list[Handout]:
    """The earlier graded functions `lesson`'s notebook hands out ([] for none, or a lesson not listed)."""
    return list(HANDOUTS.get(lesson, []))

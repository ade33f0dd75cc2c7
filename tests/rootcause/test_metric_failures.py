"""Failures visible only in the figures a run logs (rootcause/engine/metrics.py): a loss that
climbs by an order of magnitude and stays there, host memory that multiplies until the end of the
log; and the healthy runs whose figures move without failing."""

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult


def _diagnose(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


def _keras(losses: list[float]) -> str:
    return "".join(
        f"Epoch {i}\n1000/1000 [==============================] - 5s - loss: {v:.4f}\n"
        for i, v in enumerate(losses)
    )


def test_epoch_loss_that_jumps_tenfold_and_stays_is_divergence():
    text = _keras([1.20, 1.05, 0.98, 0.91, 0.84, 0.80, 0.77, 14.2, 27.1, 27.3, 27.2])
    result = _diagnose(text)

    assert slug(result) == "loss-divergence"
    # the evidence is the line where the loss jumped
    assert any("loss: 14.2000" in e.text for e in result.evidence)
    assert result.initiating_rank is None


def test_step_loss_climbing_by_orders_of_magnitude_is_divergence():
    values = [0.31, 0.29, 0.27, 0.25, 0.22, 0.20, 3120.5, 18000.2, 90211.7, 410000.1]
    text = "".join(
        f"I0101 10:00:0{i % 10} step.py:9] global step {i}: loss = {v}\n"
        for i, v in enumerate(values)
    )

    assert slug(_diagnose(text)) == "loss-divergence"


def test_a_spike_the_run_came_back_from_is_no_failure():
    text = _keras([1.20, 1.05, 0.98, 14.0, 16.0, 0.91, 0.84, 0.80, 0.77, 0.75])
    assert _diagnose(text).outcome == "no_match"


def test_a_loss_high_from_its_first_value_did_not_climb():
    # a regression loss in the thousands, falling: large values alone are nothing
    text = _keras([9000.0, 8000.0, 7000.0, 6500.0, 6400.0, 6300.0, 6350.0, 6320.0])
    assert _diagnose(text).outcome == "no_match"


def test_a_tenfold_rise_of_a_loss_near_zero_is_noise():
    text = _keras([0.02, 0.01, 0.005, 0.002, 0.001, 0.001, 0.02, 0.03, 0.02, 0.03])
    assert _diagnose(text).outcome == "no_match"


def test_a_climbing_validation_loss_is_overfitting_not_divergence():
    text = "".join(
        f"epoch {i} train loss: {1.0 / (i + 1):.3f} val_loss: {0.5 * (i + 1) ** 2:.3f}\n"
        for i in range(10)
    )
    assert _diagnose(text).outcome == "no_match"


def test_a_nan_at_the_end_is_nan_loss_whatever_came_before():
    text = _keras([1.2, 1.0, 0.9, 0.8, 0.7, 0.6, 12.0, 40.0]) + "1000/1000 - 5s - loss: nan\n"
    assert slug(_diagnose(text)) == "nan-loss"


def test_divergence_at_the_end_of_a_log_read_in_several_chunks():
    healthy = "".join(f"step {i} loss: {2.0 - i / 20000:.4f} lr: 0.0001\n" for i in range(20000))
    tail = "".join(f"step {20000 + i} loss: {300.0 + i:.4f} lr: 0.0001\n" for i in range(50))
    # chunks end at line ends, as the readers cut them
    half = healthy.index("\n", len(healthy) // 2) + 1
    chunks = [healthy[:half], healthy[half:], tail]
    result = get_engine().diagnose(chunks)

    assert slug(result) == "loss-divergence"


def _rss(figures: list[float]) -> str:
    return "".join(
        f"2024-03-01 10:0{i}:00 DEBUG TRAIN Batch 0/{100 * i} loss 4.5{i} rank 0 RSS MEM USE: {g}G\n"
        for i, g in enumerate(figures)
    )


def test_host_memory_multiplying_to_the_end_of_the_log_is_a_host_oom():
    result = _diagnose(_rss([5.1, 5.1, 5.1, 46.5, 105.6, 161.1, 212.0]))

    assert slug(result) == "host-oom-killed"
    assert any("212.0G" in e.text for e in result.evidence)


def test_host_memory_that_grew_and_then_held_is_no_failure():
    assert _diagnose(_rss([5.1, 20.0, 40.0, 60.0, 60.0, 60.0, 60.0])).outcome == "no_match"


def test_host_memory_growing_below_the_floor_is_no_failure():
    assert _diagnose(_rss([1.0, 2.0, 3.0, 4.0, 6.0, 8.0])).outcome == "no_match"


def test_the_figures_are_read_in_bounded_windows_whatever_the_lines():
    from rootcause.engine.metrics import WINDOW, _windows

    for body in ("x" * 1_000_000, ("y" * 100 + "\n") * 10_000, "short\nlog"):
        windows = _windows(body)
        assert all(len(text) <= WINDOW for _, text in windows) or windows == [(0, body)]
        assert sum(len(text) for _, text in windows) <= 2 * WINDOW


def _bar(i: int, postfix: str) -> str:
    return f"Epoch 0: {i}%|##   | {i}/100 [00:{i:02d}<01:40, 3.10it/s, {postfix}, v_num=0]\n"


def _trainer_dict(i: int) -> str:
    return f"{{'loss': {0.9 - i / 10:.3f}, 'grad_norm': 1.25, 'learning_rate': 1e-05, 'epoch': {i / 10}}}\n"


def test_a_bar_showing_nan_while_the_logged_loss_stays_finite_is_a_false_alarm():
    text = "".join(_bar(i, "loss=nan") for i in range(10, 20)) + "".join(
        _trainer_dict(i) for i in range(4)
    )
    assert _diagnose(text).outcome == "no_match"


def test_a_bar_showing_nan_after_the_last_finite_logged_loss_is_nan_loss():
    text = "".join(_trainer_dict(i) for i in range(4)) + "".join(
        _bar(i, "loss=nan") for i in range(10, 20)
    )
    assert slug(_diagnose(text)) == "nan-loss"


def test_a_bar_showing_nan_with_no_logged_loss_is_nan_loss():
    text = "".join(_bar(i, "avr_loss=nan") for i in range(10, 20))
    assert slug(_diagnose(text)) == "nan-loss"


def _census(counts: list[int], kind: str = "torch.Tensor", size: str = "torch.Size([])") -> str:
    # the usual leak hunt, printed at every step: one line per live tensor in gc.get_objects()
    return "".join(
        f"step {step}\n" + "".join(f"<class '{kind}'> {size}\n" for _ in range(n))
        for step, n in enumerate(counts)
    )


def test_a_census_of_live_tensors_growing_at_every_step_is_memory_growth():
    result = _diagnose(_census([3, 4, 5, 6]) + "step 4: done\n")

    assert slug(result) == "eval-memory-growth"
    assert result.initiating_rank is None


def test_the_census_a_paste_cuts_is_left_out():
    # 3, 4, 5 complete, then the census the log ends in, cut after one line
    assert slug(_diagnose(_census([3, 4, 5, 1]))) == "eval-memory-growth"
    # 3, 4 complete: too few to say it grows
    assert slug(_diagnose(_census([3, 4, 1]))) is None


def test_a_steady_census_is_no_failure():
    assert slug(_diagnose(_census([5, 5, 5, 5]) + "done\n")) is None
    assert slug(_diagnose(_census([5, 6, 6, 7]) + "done\n")) is None


def test_the_census_in_older_wordings_of_the_tensor_types():
    text = _census([2, 3, 4], "torch.cuda.FloatTensor", "torch.Size([64, 128])") + "done\n"
    assert slug(_diagnose(text)) == "eval-memory-growth"

//! The release: the run's memory given back in the PyTorch recipe's order, each step measured.

use std::path::Path;

use burn::tensor::{Device, Tensor};
use reclaim_model::WeightFormat;

use super::measurement::RunMeasurement;
use super::resume::TrainingState;
use crate::{ReleaseStage, TrainError, TrainingData};
use reclaim_records::write_file_atomically;

/// Gives the run's memory back, recording each [`ReleaseStage`] after `Trained`:
/// `del loader` (the training loader's scope has just ended), `del dataset` (both splits
/// dropped, their files unmapped), `torch.cuda.empty_cache()` (the final weights written, the
/// optimizer dropped, the device pool cleaned), `del model` — the recipe's order, measured as
/// it leaves the pool — and then the pool cleaned once more, now that the last owner of device
/// memory is gone ([`ReleaseStage::FinalCleanup`]).
pub(super) fn release_in_order(
    data: TrainingData,
    state: TrainingState,
    measurement: &mut RunMeasurement,
    final_weights_path: &Path,
) -> Result<(), TrainError> {
    // The scope has ended: the loader, its epochs and every worker thread are gone.
    measurement.record_release(ReleaseStage::LoaderScopeEnded);

    drop(data);
    measurement.record_release(ReleaseStage::DatasetDropped);

    let TrainingState { model, optimizer } = state;
    let final_weights = model.to_weight_bytes(WeightFormat::Burnpack)?;
    write_file_atomically(final_weights_path, &final_weights)?;
    drop(final_weights);
    drop(optimizer);
    measurement.device().memory_cleanup();
    measurement.record_release(ReleaseStage::DeviceMemoryCleanedUp);

    drop(model);
    measurement.record_release(ReleaseStage::ModelDropped);

    free_orphaned_autodiff_nodes(measurement.device());
    measurement.device().memory_cleanup();
    measurement.record_release(ReleaseStage::FinalCleanup);
    Ok(())
}

/// Frees the entries Burn's autodiff graph still keeps for tensors already dropped.
///
/// Burn 0.22.1 registers a graph node for every tensor marked as requiring a gradient (a
/// model's parameters, as soon as they are created on an autodiff device) and sweeps the nodes
/// of dropped tensors only at the end of a backward pass. A run whose last backward came before
/// its model was dropped, or whose steps run no backward at all (the fused step), would leave
/// them behind: the MLP's four parameters' nodes showed in its release report until the sweep
/// (docs/benchmarks.md, "Why the release sweeps Burn's autodiff graph"). One backward pass on
/// a one-value tensor of `device`'s autodiff form runs the sweep; the warm-up runs it before
/// the baseline too, so that the release is compared like with like.
pub(super) fn free_orphaned_autodiff_nodes(device: &Device) {
    let autodiff = device.clone().autodiff();
    let _ = Tensor::<1>::zeros([1], &autodiff)
        .require_grad()
        .sum()
        .backward();
}

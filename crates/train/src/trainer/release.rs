//! The release: the run's memory given back in the PyTorch recipe's order, each step measured.

use std::path::Path;

use reclaim_model::{WeightFormat, free_orphaned_autodiff_nodes};

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

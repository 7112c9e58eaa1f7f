//! [`free_orphaned_autodiff_nodes`]: the graph entries of dropped parameters, freed.

use burn::tensor::{Device, Tensor};

/// Frees the entries Burn's autodiff graph still keeps for tensors already dropped.
///
/// Burn 0.22.1 registers a graph node for every tensor marked as requiring a gradient (a
/// model's parameters, as soon as they are created on an autodiff device) and sweeps the nodes
/// of dropped tensors only at the end of a backward pass. A model dropped after its last
/// backward pass (at the end of any training, through reclaim-train or burn-train's `Learner`),
/// or trained without one (the fused step), leaves its parameters' nodes behind until the next
/// backward: a few KiB for the MLP, which an exact count of the live heap sees. One backward
/// pass on a one-value tensor of `device`'s autodiff form runs the sweep; call it after the
/// last model of a run is dropped.
///
/// ```
/// use burn::tensor::Device;
/// use reclaim_model::{MlpConfig, free_orphaned_autodiff_nodes};
///
/// let device = Device::flex().autodiff();
/// let model = MlpConfig::new().init_seeded(&device, 42);
/// drop(model);
/// free_orphaned_autodiff_nodes(&device);
/// ```
pub fn free_orphaned_autodiff_nodes(device: &Device) {
    let autodiff = device.clone().autodiff();
    let _ = Tensor::<1>::zeros([1], &autodiff)
        .require_grad()
        .sum()
        .backward();
}

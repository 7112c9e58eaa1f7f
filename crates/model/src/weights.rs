//! Weights to and from bytes, for any of the crate's modules, and the objective every
//! classifier shares (cross-entropy, right answers).

use std::fmt;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::store::{BurnpackStore, ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Bytes, Int, Tensor};

use crate::ModelError;

/// How weights are serialized by [`Mlp::to_weight_bytes`](crate::Mlp::to_weight_bytes),
/// [`ConvNet::to_weight_bytes`](crate::ConvNet::to_weight_bytes) and
/// [`Classifier::to_weight_bytes`](crate::Classifier::to_weight_bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// Burn's native burnpack format (`.bpk`).
    Burnpack,
    /// The SafeTensors format (`.safetensors`), readable from Python.
    Safetensors,
}

impl WeightFormat {
    /// The usual file extension, without the dot.
    pub fn file_extension(self) -> &'static str {
        match self {
            WeightFormat::Burnpack => "bpk",
            WeightFormat::Safetensors => "safetensors",
        }
    }
}

impl fmt::Display for WeightFormat {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            WeightFormat::Burnpack => "burnpack",
            WeightFormat::Safetensors => "safetensors",
        })
    }
}

/// The weights of `module`, serialized in `format`.
pub(crate) fn save_weights<M: Module>(
    module: &M,
    format: WeightFormat,
) -> Result<Vec<u8>, ModelError> {
    let save_error = |message: String| ModelError::SaveWeights { format, message };
    match format {
        WeightFormat::Burnpack => {
            let mut store = BurnpackStore::from_bytes(None);
            module
                .save_into(&mut store)
                .map_err(|error| save_error(error.to_string()))?;
            let bytes = store
                .get_bytes()
                .map_err(|error| save_error(error.to_string()))?;
            Ok(bytes.to_vec())
        }
        WeightFormat::Safetensors => {
            let mut store = SafetensorsStore::from_bytes(None);
            module
                .save_into(&mut store)
                .map_err(|error| save_error(error.to_string()))?;
            store
                .get_bytes()
                .map_err(|error| save_error(error.to_string()))
        }
    }
}

/// `module` with its weights replaced by those in `bytes`. Every parameter must be present with
/// the right shape; anything missing or extra is an error.
pub(crate) fn load_weights<M: Module>(
    mut module: M,
    bytes: &[u8],
    format: WeightFormat,
) -> Result<M, ModelError> {
    let load_error = |message: String| ModelError::LoadWeights { format, message };
    let result = match format {
        WeightFormat::Burnpack => {
            let mut store = BurnpackStore::from_bytes(Some(Bytes::from_bytes_vec(bytes.to_vec())));
            module
                .load_from(&mut store)
                .map_err(|error| load_error(error.to_string()))?
        }
        WeightFormat::Safetensors => {
            let mut store = SafetensorsStore::from_bytes(Some(bytes.to_vec()));
            module
                .load_from(&mut store)
                .map_err(|error| load_error(error.to_string()))?
        }
    };
    if !result.is_success() || !result.missing.is_empty() || !result.unused.is_empty() {
        return Err(load_error(format!(
            "missing {:?}, unused {:?}, errors {:?}",
            result.missing, result.unused, result.errors
        )));
    }
    Ok(module)
}

/// Mean cross-entropy of `logits` against `labels` (class indices), a one-element tensor.
pub(crate) fn cross_entropy(logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
    CrossEntropyLossConfig::new()
        .init(&logits.device())
        .forward(logits, labels)
}

/// How many rows of `logits` have their largest value at the row's label, as a one-element
/// integer tensor.
pub(crate) fn count_correct(logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1, Int> {
    let predictions = logits.argmax(1).squeeze_dim::<1>(1);
    predictions.equal(labels).int().sum()
}

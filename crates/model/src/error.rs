/// Everything that can go wrong in `reclaim-model`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// Serializing the weights into the given format failed.
    #[error("cannot save the weights as {format}: {message}")]
    SaveWeights {
        /// The format that was asked for.
        format: crate::WeightFormat,
        /// What the store reported.
        message: String,
    },
    /// The bytes could not be read as weights of the given format, or did not fit the model.
    #[error("cannot load {format} weights: {message}")]
    LoadWeights {
        /// The format that was asked for.
        format: crate::WeightFormat,
        /// What the store reported.
        message: String,
    },
}

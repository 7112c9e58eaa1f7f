use std::fmt;

/// Everything that can go wrong in `reclaim-model`.
#[derive(Debug)]
#[non_exhaustive]
pub enum ModelError {
    /// Serializing the weights into the given format failed.
    SaveWeights {
        /// The format that was asked for.
        format: crate::WeightFormat,
        /// What the store reported.
        message: String,
    },
    /// The bytes could not be read as weights of the given format, or did not fit the model.
    LoadWeights {
        /// The format that was asked for.
        format: crate::WeightFormat,
        /// What the store reported.
        message: String,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::SaveWeights { format, message } => {
                write!(formatter, "cannot save the weights as {format}: {message}")
            }
            ModelError::LoadWeights { format, message } => {
                write!(formatter, "cannot load {format} weights: {message}")
            }
        }
    }
}

impl std::error::Error for ModelError {}

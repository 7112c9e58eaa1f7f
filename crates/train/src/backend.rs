use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;
use reclaim_model::ModelKind;

use crate::TrainError;

/// A Burn backend that Reclaim can train on, chosen by name (`--backend ndarray`).
///
/// Every variant exists whatever the build; [`BackendChoice::device`] reports a backend whose
/// cargo feature was not enabled as [`TrainError::BackendNotCompiled`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// Burn's NdArray CPU backend: the design's reference CPU path, and the default of builds
    /// without Flex.
    Ndarray,
    /// Burn's Flex pure-Rust CPU backend: the default where it is compiled in (the faster CPU
    /// path, docs/backends.md).
    Flex,
    /// Burn's wgpu backend: a GPU through Vulkan/Metal/DX12, or a software Vulkan driver.
    Wgpu,
    /// Burn's CUDA backend, device 0.
    Cuda,
}

impl BackendChoice {
    /// Every backend, in the order they are listed to users.
    pub const ALL: [BackendChoice; 4] = [
        BackendChoice::Ndarray,
        BackendChoice::Flex,
        BackendChoice::Wgpu,
        BackendChoice::Cuda,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Ndarray => "ndarray",
            BackendChoice::Flex => "flex",
            BackendChoice::Wgpu => "wgpu",
            BackendChoice::Cuda => "cuda",
        }
    }

    /// The cargo feature (of the `reclaim` and `reclaim-train` packages) that compiles it in.
    pub fn cargo_feature(self) -> &'static str {
        self.name()
    }

    /// Whether this build includes the backend.
    pub fn is_compiled(self) -> bool {
        match self {
            BackendChoice::Ndarray => cfg!(feature = "ndarray"),
            BackendChoice::Flex => cfg!(feature = "flex"),
            BackendChoice::Wgpu => cfg!(feature = "wgpu"),
            BackendChoice::Cuda => cfg!(feature = "cuda"),
        }
    }

    /// The CPU backend used when none is named: Flex where this build includes it (the faster
    /// CPU path, docs/benchmarks.md), else NdArray.
    pub fn default_cpu() -> BackendChoice {
        if BackendChoice::Flex.is_compiled() {
            BackendChoice::Flex
        } else {
            BackendChoice::Ndarray
        }
    }

    /// Why this backend does not train `model`, or `None` where it does.
    ///
    /// NdArray does not train the convolutional network: Burn 0.22.1 computes NdArray's
    /// convolution gradients in scalar loops, so an epoch of the CNN takes hours where Flex
    /// takes seconds (docs/benchmarks.md, "The CNN on a CPU"), and Burn marks burn-ndarray
    /// deprecated in favour of Flex. Evaluating saved weights on NdArray still works.
    pub fn training_obstacle(self, model: ModelKind) -> Option<&'static str> {
        match (self, model) {
            (BackendChoice::Ndarray, ModelKind::Cnn) => Some(
                "Burn's NdArray computes a convolution's gradients in scalar loops, hours per \
                 epoch, and Burn deprecates NdArray in favour of Flex; train it on flex (the \
                 default CPU backend) or wgpu",
            ),
            _ => None,
        }
    }

    /// The backends this build includes.
    pub fn compiled() -> Vec<BackendChoice> {
        Self::ALL
            .into_iter()
            .filter(|backend| backend.is_compiled())
            .collect()
    }

    /// The device of this backend (without autodiff), or an error naming the feature to enable.
    pub fn device(self) -> Result<Device, TrainError> {
        match self {
            #[cfg(feature = "ndarray")]
            #[allow(deprecated)]
            // Burn marks NdArray deprecated in favour of Flex; we keep both.
            BackendChoice::Ndarray => Ok(Device::ndarray()),
            #[cfg(feature = "flex")]
            BackendChoice::Flex => Ok(Device::flex()),
            #[cfg(feature = "wgpu")]
            BackendChoice::Wgpu => Ok(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
            #[cfg(feature = "cuda")]
            BackendChoice::Cuda => Ok(Device::cuda(0)),
            #[allow(unreachable_patterns)] // reachable in builds without every backend
            backend => Err(TrainError::BackendNotCompiled {
                backend: backend.name(),
                feature: backend.cargo_feature(),
            }),
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for BackendChoice {
    type Err = TrainError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|backend| backend.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| TrainError::UnknownBackend {
                name: name.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for backend in BackendChoice::ALL {
            assert_eq!(backend.name().parse::<BackendChoice>().unwrap(), backend);
        }
        assert_eq!(
            " NDArray ".parse::<BackendChoice>().unwrap(),
            BackendChoice::Ndarray
        );
    }

    #[test]
    fn the_default_cpu_backend_is_flex_where_it_is_compiled() {
        let default = BackendChoice::default_cpu();
        assert!(default.is_compiled() || !BackendChoice::Ndarray.is_compiled());
        let expected = if cfg!(feature = "flex") {
            BackendChoice::Flex
        } else {
            BackendChoice::Ndarray
        };
        assert_eq!(default, expected);
    }

    #[test]
    fn unknown_names_are_refused_with_the_name() {
        let error = "tpu".parse::<BackendChoice>().unwrap_err();
        assert!(matches!(&error, TrainError::UnknownBackend { name } if name == "tpu"));
        assert!(error.to_string().contains("tpu"));
    }

    #[test]
    fn an_uncompiled_backend_names_its_feature() {
        for backend in BackendChoice::ALL {
            match backend.device() {
                Ok(_) => assert!(backend.is_compiled()),
                Err(error) => {
                    assert!(!backend.is_compiled());
                    assert!(
                        error
                            .to_string()
                            .contains(&format!("--features {}", backend.name()))
                    );
                }
            }
        }
    }
}

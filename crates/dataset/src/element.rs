//! The six IDX element types and their big-endian encoding.

use std::fmt;

/// The element type of an IDX file (third byte of the magic number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// Unsigned byte, code `0x08`.
    U8,
    /// Signed byte, code `0x09`.
    I8,
    /// Big-endian signed 16-bit integer, code `0x0B`.
    I16,
    /// Big-endian signed 32-bit integer, code `0x0C`.
    I32,
    /// Big-endian IEEE 754 single precision float, code `0x0D`.
    F32,
    /// Big-endian IEEE 754 double precision float, code `0x0E`.
    F64,
}

impl ElementType {
    /// All six element types, in code order.
    pub const ALL: [ElementType; 6] = [
        ElementType::U8,
        ElementType::I8,
        ElementType::I16,
        ElementType::I32,
        ElementType::F32,
        ElementType::F64,
    ];

    /// The type code stored in the third byte of the magic number.
    pub fn code(self) -> u8 {
        match self {
            ElementType::U8 => 0x08,
            ElementType::I8 => 0x09,
            ElementType::I16 => 0x0B,
            ElementType::I32 => 0x0C,
            ElementType::F32 => 0x0D,
            ElementType::F64 => 0x0E,
        }
    }

    /// The element type for a type code, `None` for an unknown code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0x08 => Some(ElementType::U8),
            0x09 => Some(ElementType::I8),
            0x0B => Some(ElementType::I16),
            0x0C => Some(ElementType::I32),
            0x0D => Some(ElementType::F32),
            0x0E => Some(ElementType::F64),
            _ => None,
        }
    }

    /// Bytes per element: 1, 1, 2, 4, 4 or 8.
    pub fn size_in_bytes(self) -> usize {
        match self {
            ElementType::U8 | ElementType::I8 => 1,
            ElementType::I16 => 2,
            ElementType::I32 | ElementType::F32 => 4,
            ElementType::F64 => 8,
        }
    }

    /// The Rust name of the type: `u8`, `i8`, `i16`, `i32`, `f32` or `f64`.
    pub fn name(self) -> &'static str {
        match self {
            ElementType::U8 => "u8",
            ElementType::I8 => "i8",
            ElementType::I16 => "i16",
            ElementType::I32 => "i32",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for i8 {}
    impl Sealed for i16 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A Rust type that is one of the six IDX element types (`u8`, `i8`, `i16`, `i32`, `f32`, `f64`).
///
/// Sealed: it cannot be implemented outside this crate.
pub trait IdxElement: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The IDX element type this Rust type stands for.
    const ELEMENT_TYPE: ElementType;

    /// Decodes big-endian bytes into `output`. `bytes.len()` must be a multiple of the element
    /// size; a remainder that does not fill an element is ignored.
    fn decode_big_endian(bytes: &[u8], output: &mut Vec<Self>);

    /// Appends the big-endian bytes of every element of `values` to `output`.
    fn encode_big_endian(values: &[Self], output: &mut Vec<u8>);
}

macro_rules! multi_byte_element {
    ($type:ty, $element:expr, $size:expr) => {
        impl IdxElement for $type {
            const ELEMENT_TYPE: ElementType = $element;

            fn decode_big_endian(bytes: &[u8], output: &mut Vec<Self>) {
                output.reserve(bytes.len() / $size);
                output.extend(bytes.chunks_exact($size).map(|chunk| {
                    let mut array = [0u8; $size];
                    array.copy_from_slice(chunk);
                    <$type>::from_be_bytes(array)
                }));
            }

            fn encode_big_endian(values: &[Self], output: &mut Vec<u8>) {
                output.reserve(values.len() * $size);
                for value in values {
                    output.extend_from_slice(&value.to_be_bytes());
                }
            }
        }
    };
}

multi_byte_element!(u8, ElementType::U8, 1);
multi_byte_element!(i8, ElementType::I8, 1);
multi_byte_element!(i16, ElementType::I16, 2);
multi_byte_element!(i32, ElementType::I32, 4);
multi_byte_element!(f32, ElementType::F32, 4);
multi_byte_element!(f64, ElementType::F64, 8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_codes_are_rejected() {
        for element_type in ElementType::ALL {
            assert_eq!(
                ElementType::from_code(element_type.code()),
                Some(element_type)
            );
        }
        let known: Vec<u8> = ElementType::ALL.iter().map(|t| t.code()).collect();
        for code in 0..=u8::MAX {
            if !known.contains(&code) {
                assert_eq!(ElementType::from_code(code), None, "code {code:#x}");
            }
        }
    }

    #[test]
    fn sizes_match_the_rust_types() {
        assert_eq!(ElementType::U8.size_in_bytes(), size_of::<u8>());
        assert_eq!(ElementType::I8.size_in_bytes(), size_of::<i8>());
        assert_eq!(ElementType::I16.size_in_bytes(), size_of::<i16>());
        assert_eq!(ElementType::I32.size_in_bytes(), size_of::<i32>());
        assert_eq!(ElementType::F32.size_in_bytes(), size_of::<f32>());
        assert_eq!(ElementType::F64.size_in_bytes(), size_of::<f64>());
    }

    #[test]
    fn encoding_is_big_endian() {
        let mut bytes = Vec::new();
        i16::encode_big_endian(&[0x0102, -2], &mut bytes);
        assert_eq!(bytes, [0x01, 0x02, 0xFF, 0xFE]);
        let mut decoded = Vec::new();
        i16::decode_big_endian(&bytes, &mut decoded);
        assert_eq!(decoded, [0x0102, -2]);

        let mut bytes = Vec::new();
        f32::encode_big_endian(&[1.0], &mut bytes);
        assert_eq!(bytes, [0x3F, 0x80, 0x00, 0x00]);
    }
}

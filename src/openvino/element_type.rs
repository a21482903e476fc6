//! Element types (`ov_element_type_e`) and the Rust types that can view tensor data.

use std::fmt;

use openvino_sys::ov_element_type_e as E;

use crate::error::{Error, Result};

/// A tensor element type: OpenVINO's `ov_element_type_e` (OpenVINO ≥ 2025.1 numbering).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// Not known until run time.
    Dynamic,
    /// `boolean`, one byte per element.
    Boolean,
    /// bfloat16.
    Bf16,
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// 4-bit signed integer (packed).
    I4,
    /// 8-bit signed integer.
    I8,
    /// 16-bit signed integer.
    I16,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 1-bit (binary, packed).
    U1,
    /// 2-bit unsigned (packed).
    U2,
    /// 3-bit unsigned (packed).
    U3,
    /// 4-bit unsigned (packed).
    U4,
    /// 6-bit unsigned (packed).
    U6,
    /// 8-bit unsigned integer.
    U8,
    /// 16-bit unsigned integer.
    U16,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit unsigned integer.
    U64,
    /// 4-bit NormalFloat.
    Nf4,
    /// 8-bit float, e4m3.
    F8E4M3,
    /// 8-bit float, e5m2.
    F8E5M2,
    /// Strings (not plain memory: no data access through this crate).
    String,
    /// 4-bit float, e2m1.
    F4E2M1,
    /// 8-bit exponent-only float, e8m0.
    F8E8M0,
}

impl ElementType {
    /// Every element type.
    pub const ALL: [ElementType; 26] = {
        use ElementType::*;
        [
            Dynamic, Boolean, Bf16, F16, F32, F64, I4, I8, I16, I32, I64, U1, U2, U3, U4, U6, U8, U16, U32, U64, Nf4,
            F8E4M3, F8E5M2, String, F4E2M1, F8E8M0,
        ]
    };

    /// The number of bits per element (0 for [`Dynamic`](Self::Dynamic) and
    /// [`String`](Self::String), whose size is not a bit count).
    pub fn bits(self) -> usize {
        use ElementType::*;
        match self {
            Dynamic | String => 0,
            U1 => 1,
            U2 => 2,
            U3 => 3,
            I4 | U4 | Nf4 | F4E2M1 => 4,
            U6 => 6,
            Boolean | I8 | U8 | F8E4M3 | F8E5M2 | F8E8M0 => 8,
            Bf16 | F16 | I16 | U16 => 16,
            F32 | I32 | U32 => 32,
            F64 | I64 | U64 => 64,
        }
    }

    /// Bytes needed for `elements` elements, as OpenVINO sizes its tensors: packed sub-byte types
    /// round up to a whole byte, except `u3` and `u6`, which OpenVINO stores in groups of three
    /// bytes (8 `u3` or 4 `u6` elements each; a single `u3` element takes 3 bytes, not 1).
    ///
    /// # Panics
    /// When the size overflows `usize`; see [`checked_byte_size`](Self::checked_byte_size).
    pub fn byte_size(self, elements: usize) -> usize {
        self.checked_byte_size(elements).expect("the tensor's byte size overflows usize")
    }

    /// [`byte_size`](Self::byte_size), or `None` when it overflows `usize`.
    pub fn checked_byte_size(self, elements: usize) -> Option<usize> {
        match self {
            ElementType::U3 => elements.div_ceil(8).checked_mul(3),
            ElementType::U6 => elements.div_ceil(4).checked_mul(3),
            _ => elements.checked_mul(self.bits()).map(|b| b.div_ceil(8)),
        }
    }

    /// The lower-case name OpenVINO uses in IR files and messages (`"f32"`, `"u8"`, ...).
    pub fn name(self) -> &'static str {
        use ElementType::*;
        match self {
            Dynamic => "dynamic",
            Boolean => "boolean",
            Bf16 => "bf16",
            F16 => "f16",
            F32 => "f32",
            F64 => "f64",
            I4 => "i4",
            I8 => "i8",
            I16 => "i16",
            I32 => "i32",
            I64 => "i64",
            U1 => "u1",
            U2 => "u2",
            U3 => "u3",
            U4 => "u4",
            U6 => "u6",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            Nf4 => "nf4",
            F8E4M3 => "f8e4m3",
            F8E5M2 => "f8e5m2",
            String => "string",
            F4E2M1 => "f4e2m1",
            F8E8M0 => "f8e8m0",
        }
    }

    /// The element type named `name` (as [`name`](Self::name) prints it), if there is one.
    pub fn from_name(name: &str) -> Option<ElementType> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    pub(crate) fn to_sys(self) -> E {
        use ElementType::*;
        match self {
            Dynamic => E::DYNAMIC,
            Boolean => E::OV_BOOLEAN,
            Bf16 => E::BF16,
            F16 => E::F16,
            F32 => E::F32,
            F64 => E::F64,
            I4 => E::I4,
            I8 => E::I8,
            I16 => E::I16,
            I32 => E::I32,
            I64 => E::I64,
            U1 => E::U1,
            U2 => E::U2,
            U3 => E::U3,
            U4 => E::U4,
            U6 => E::U6,
            U8 => E::U8,
            U16 => E::U16,
            U32 => E::U32,
            U64 => E::U64,
            Nf4 => E::NF4,
            F8E4M3 => E::F8E4M3,
            F8E5M2 => E::F8E5M3,
            String => E::STRING,
            F4E2M1 => E::F4E2M1,
            F8E8M0 => E::F8E8M0,
        }
    }

    pub(crate) fn from_sys(e: E) -> Self {
        use ElementType::*;
        match e {
            E::DYNAMIC => Dynamic,
            E::OV_BOOLEAN => Boolean,
            E::BF16 => Bf16,
            E::F16 => F16,
            E::F32 => F32,
            E::F64 => F64,
            E::I4 => I4,
            E::I8 => I8,
            E::I16 => I16,
            E::I32 => I32,
            E::I64 => I64,
            E::U1 => U1,
            E::U2 => U2,
            E::U3 => U3,
            E::U4 => U4,
            E::U6 => U6,
            E::U8 => U8,
            E::U16 => U16,
            E::U32 => U32,
            E::U64 => U64,
            E::NF4 => Nf4,
            E::F8E4M3 => F8E4M3,
            E::F8E5M3 => F8E5M2,
            E::STRING => String,
            E::F4E2M1 => F4E2M1,
            E::F8E8M0 => F8E8M0,
        }
    }

    /// Checks that `T` views elements of this type.
    pub(crate) fn check<T: Element>(self, what: &str) -> Result<()> {
        if T::ELEMENT_TYPE == self {
            Ok(())
        } else {
            Err(Error::element_type(format!(
                "{what} holds {self} elements, but they were accessed as {} ({})",
                std::any::type_name::<T>(),
                T::ELEMENT_TYPE
            )))
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose values are the elements of tensors of one [`ElementType`].
///
/// Sealed: implemented for the plain-old-data types `u8 i8 u16 i16 u32 i32 u64 i64 f32 f64` and
/// [`F16`]. Every bit pattern of these types is a valid value, so any tensor memory can be viewed
/// as a slice of them.
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The element type this Rust type views.
    const ELEMENT_TYPE: ElementType;
}

macro_rules! element {
    ($($t:ty => $e:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const ELEMENT_TYPE: ElementType = ElementType::$e;
        }
    )*};
}
element!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, u64 => U64,
         i64 => I64, f32 => F32, f64 => F64, F16 => F16);

/// An IEEE 754 half-precision number, stored as its bits (the element of [`ElementType::F16`]).
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

impl F16 {
    /// Rounds `x` to the nearest half-precision value (ties to even; overflow gives infinity).
    pub fn from_f32(x: f32) -> F16 {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32;
        let man = b & 0x7f_ffff;
        if exp == 0xff {
            // Inf or NaN (keep NaN quiet and non-zero).
            return F16(sign | 0x7c00 | if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            // Subnormal half (or zero).
            if e < -10 {
                return F16(sign);
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let rest = m & ((1u32 << shift) - 1);
            let mut h = m >> shift;
            if rest > half || (rest == half && (h & 1) == 1) {
                h += 1;
            }
            return F16(sign | h as u16);
        }
        let mut h = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        if rest > 0x1000 || (rest == 0x1000 && (h & 1) == 1) {
            h += 1; // may carry into the exponent, which is the correct rounding (up to infinity)
        }
        F16(sign | h as u16)
    }

    /// The exact `f32` value of this half.
    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        let bits = if exp == 0 {
            if man == 0 {
                sign
            } else {
                // Subnormal: normalise.
                let mut e = 127 - 15 + 1;
                let mut m = man;
                while m & 0x400 == 0 {
                    m <<= 1;
                    e -= 1;
                }
                sign | ((e as u32) << 23) | ((m & 0x3ff) << 13)
            }
        } else if exp == 0x1f {
            sign | 0x7f80_0000 | (man << 13)
        } else {
            sign | ((exp + 127 - 15) << 23) | (man << 13)
        };
        f32::from_bits(bits)
    }
}

impl fmt::Debug for F16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_f32())
    }
}

impl From<f32> for F16 {
    fn from(x: f32) -> Self {
        F16::from_f32(x)
    }
}

impl From<F16> for f32 {
    fn from(x: F16) -> Self {
        x.to_f32()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips() {
        for x in [0.0f32, -0.0, 1.0, -2.5, 0.333_251_95, 65504.0, 6.103_515_6e-5, 5.960_464_5e-8] {
            assert_eq!(F16::from_f32(x).to_f32(), x, "{x}");
        }
        assert_eq!(F16::from_f32(1.0).0, 0x3c00);
        assert_eq!(F16::from_f32(1e6).to_f32(), f32::INFINITY);
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
        // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: rounds to even (1).
        assert_eq!(F16::from_f32(1.0 + 2f32.powi(-11)).0, 0x3c00);
        // every half converts to f32 and back unchanged
        for h in 0..=0xffffu16 {
            let f = F16(h).to_f32();
            if !f.is_nan() {
                assert_eq!(F16::from_f32(f).0, h);
            }
        }
    }

    #[test]
    fn sys_round_trip() {
        for e in [ElementType::F32, ElementType::U8, ElementType::F16, ElementType::F8E5M2, ElementType::String] {
            assert_eq!(ElementType::from_sys(e.to_sys()), e);
        }
        assert_eq!(ElementType::U4.byte_size(3), 2);
    }

    #[test]
    fn three_and_six_bit_types_take_groups_of_three_bytes() {
        // As OpenVINO 2026.4 sizes tensors of 1..=9 elements.
        let u3: Vec<usize> = (1..=9).map(|n| ElementType::U3.byte_size(n)).collect();
        assert_eq!(u3, [3, 3, 3, 3, 3, 3, 3, 3, 6]);
        let u6: Vec<usize> = (1..=9).map(|n| ElementType::U6.byte_size(n)).collect();
        assert_eq!(u6, [3, 3, 3, 3, 6, 6, 6, 6, 9]);
        assert_eq!(ElementType::U2.byte_size(5), 2);
        assert_eq!(ElementType::U3.checked_byte_size(usize::MAX), Some(usize::MAX.div_ceil(8) * 3));
        assert_eq!(ElementType::U6.checked_byte_size(usize::MAX), Some(usize::MAX.div_ceil(4) * 3));
        assert_eq!(ElementType::F32.checked_byte_size(usize::MAX / 3), None);
    }
}

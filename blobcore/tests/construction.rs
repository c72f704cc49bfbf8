//! Serrano's construction: a repeating value (`numpy.full`) and shape
//! equality with and without the dtype.

mod common;

use blobcore::{Blob, DType};

#[test]
fn full_fills_every_element_as_numpy_full() {
    let e = common::engine();
    let b = Blob::full(&e, DType::F32, &[2, 3], 2.5).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), [2.5; 6]);
    // Integers truncate toward zero, as numpy.full(..., 2.75, int32).
    assert_eq!(Blob::full(&e, DType::I32, &[2], -2.75).unwrap().to_vec::<i32>().unwrap(), [-2, -2]);
    assert_eq!(Blob::full(&e, DType::U8, &[1], 255.0).unwrap().to_vec::<u8>().unwrap(), [255]);
    assert_eq!(Blob::full(&e, DType::I64, &[1], -(2f64.powi(63))).unwrap().to_vec::<i64>().unwrap(), [i64::MIN]);
    assert_eq!(Blob::full(&e, DType::F64, &[], 1.0).unwrap().count(), 1);
    assert_eq!(Blob::full(&e, DType::F32, &[0, 4], 1.0).unwrap().count(), 0);
    for (dtype, v) in [(DType::U8, 256.0), (DType::U8, -1.0), (DType::I8, 128.0), (DType::I32, f64::NAN), (DType::I64, 2f64.powi(63)), (DType::I32, f64::INFINITY)] {
        assert_eq!(Blob::full(&e, dtype, &[2], v).unwrap_err().code(), 6, "{dtype} {v}");
    }
    // Floats take any value (they round; infinities stay).
    assert!(Blob::full(&e, DType::F16, &[1], 1e10).unwrap().to_vec::<half::f16>().unwrap()[0].is_infinite());
}

#[test]
fn same_shape_is_numpy_shape_equality_optionally_with_dtype() {
    let e = common::engine();
    let t = |d: DType, dims: &[usize]| Blob::tensor(&e, d, dims).unwrap();
    let a = t(DType::F32, &[2, 3]);
    assert!(a.same_shape(&t(DType::F32, &[2, 3]), true));
    assert!(!a.same_shape(&t(DType::I32, &[2, 3]), true));
    assert!(a.same_shape(&t(DType::I32, &[2, 3]), false));
    assert!(!a.same_shape(&t(DType::F32, &[2, 3, 1]), false));
    assert!(a.has_equal_dims(&t(DType::F32, &[2, 3, 1])));
}

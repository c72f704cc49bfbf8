//! NeoML's typed `CopyTo(dst, size)` / `CopyFrom(src)`: the first `size`
//! elements, dtype-checked, in Rust (typed slices and run-time dtypes).

mod common;

use blobcore::{Blob, DType};

#[test]
fn copy_to_prefix_takes_the_first_elements() {
    let e = common::engine();
    let b = Blob::from_slice(&e, &[2, 3], &[0f32, 1., 2., 3., 4., 5.]).unwrap();
    let mut four = [9f32; 4];
    b.copy_to_prefix(&mut four).unwrap();
    assert_eq!(four, [0., 1., 2., 3.]);
    let mut none: [f32; 0] = [];
    b.copy_to_prefix(&mut none).unwrap();
    let mut all = [0f32; 6];
    b.copy_to_prefix(&mut all).unwrap();
    assert_eq!(all, [0., 1., 2., 3., 4., 5.]);
    // Run-time dtype, as C and Python call it.
    let mut bytes = [0u8; 8];
    b.copy_to_prefix_bytes(DType::F32, &mut bytes).unwrap();
    assert_eq!(bytes[4..8], 1f32.to_ne_bytes());
    // Wrong type, too many, partial elements: errors, nothing written.
    let mut ints = [7i32; 2];
    assert_eq!(b.copy_to_prefix(&mut ints).unwrap_err().code(), 5);
    assert_eq!(ints, [7, 7]);
    let mut seven = [0f32; 7];
    assert_eq!(b.copy_to_prefix(&mut seven).unwrap_err().code(), 3);
    assert_eq!(b.copy_to_prefix_bytes(DType::F32, &mut [0u8; 6]).unwrap_err().code(), 3);
    assert_eq!(b.copy_to_prefix_bytes(DType::F64, &mut [0u8; 8]).unwrap_err().code(), 5);
}

#[test]
fn copy_from_prefix_writes_the_first_elements_and_keeps_the_rest() {
    let e = common::engine();
    let b = Blob::from_slice(&e, &[2, 3], &[0i32, 1, 2, 3, 4, 5]).unwrap();
    b.copy_from_prefix(&[10i32, 11]).unwrap();
    assert_eq!(b.to_vec::<i32>().unwrap(), [10, 11, 2, 3, 4, 5]);
    b.copy_from_prefix(&[6i32, 5, 4, 3, 2, 1]).unwrap();
    assert_eq!(b.to_vec::<i32>().unwrap(), [6, 5, 4, 3, 2, 1]);
    assert_eq!(b.copy_from_prefix(&[1f32]).unwrap_err().code(), 5);
    assert_eq!(b.copy_from_prefix(&[0i32; 7]).unwrap_err().code(), 3);
    assert_eq!(b.to_vec::<i32>().unwrap(), [6, 5, 4, 3, 2, 1]);
    // Own memory as the source: a memmove (shift left by one element).
    let e2 = b.export().unwrap();
    // SAFETY: the export pins the blob's 24 bytes; 5 elements from element 1.
    unsafe { b.copy_from_prefix_ptr(DType::I32, e2.as_ptr().add(4), 20).unwrap() };
    drop(e2);
    assert_eq!(b.to_vec::<i32>().unwrap(), [5, 4, 3, 2, 1, 1]);
    // A window: the prefix of the window's own elements.
    let w = b.window(1).unwrap();
    w.copy_from_prefix(&[-1i32]).unwrap();
    assert_eq!(b.to_vec::<i32>().unwrap()[0], -1);
}

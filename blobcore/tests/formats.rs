//! File formats against real files from the field (`../shared/data/caffe`):
//! the ImageNet mean as a legacy Caffe BlobProto must equal the same mean
//! saved by NumPy as float64, and every format must round-trip exactly.

mod common;

use blobcore::io::caffe::BlobProto;
use blobcore::{Blob, DType, Engine, Error};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/caffe").join(name);
    assert!(p.exists(), "{} is missing: the tests read the shared data directory next to the repository", p.display());
    p
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blobcore-formats-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn imagenet_mean_binaryproto_equals_the_npy() {
    let e = common::engine();
    let proto = Blob::load_caffe(&e, data("imagenet_mean.binaryproto")).unwrap();
    assert_eq!(proto.dims(), [1, 3, 256, 256]);
    assert_eq!(proto.dtype(), DType::F32);
    let npy = Blob::load_npy(&e, data("ilsvrc_2012_mean.npy")).unwrap();
    assert_eq!(npy.dims(), [3, 256, 256]);
    assert_eq!(npy.dtype(), DType::F64);
    let a = proto.to_vec::<f32>().unwrap();
    let b = npy.to_vec::<f64>().unwrap();
    assert_eq!(a.len(), b.len());
    let diffs = a.iter().zip(&b).filter(|(&x, &y)| x != y as f32).count();
    assert_eq!(diffs, 0, "every element equals the .npy's value cast to f32");
    // The per-channel means the examples print.
    let means: Vec<f64> = a.chunks(256 * 256).map(|c| c.iter().map(|&v| v as f64).sum::<f64>() / 65536.0).collect();
    for (m, want) in means.iter().zip([104.007, 116.669, 122.679]) {
        assert!((m - want).abs() < 5e-4, "{m} vs {want}");
    }
}

#[test]
fn cifar10_mean_is_legacy_1x3x32x32() {
    let e = common::engine();
    let b = Blob::load_caffe(&e, data("cifar10_mean.binaryproto")).unwrap();
    assert_eq!(b.dims(), [1, 3, 32, 32]);
    assert!(b.diff_if_created().is_none());
    let bytes = std::fs::read(data("cifar10_mean.binaryproto")).unwrap();
    let p = BlobProto::decode_bytes(&bytes).unwrap();
    assert!(p.has_legacy_shape() && p.shape.is_none());
    assert_eq!(p.data.len(), 3 * 32 * 32);
    assert_eq!(b.to_vec::<f32>().unwrap(), p.data);
    let v = b.to_vec::<f32>().unwrap();
    assert!(v.iter().all(|x| (0.0..=255.0).contains(x)), "pixel means lie in 0..=255");
}

#[test]
fn caffe_round_trip_is_exact_and_writes_the_shape_form() {
    let e = common::engine();
    let a = Blob::load_caffe(&e, data("imagenet_mean.binaryproto")).unwrap();
    let p = tmp("imagenet.binaryproto");
    a.save_caffe(&p, false).unwrap();
    let written = BlobProto::decode_bytes(&std::fs::read(&p).unwrap()).unwrap();
    assert!(!written.has_legacy_shape());
    assert_eq!(written.shape.unwrap().dim, [1, 3, 256, 256]);
    let b = Blob::load_caffe(&e, &p).unwrap();
    assert_eq!(b.dims(), a.dims());
    assert_eq!(b.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
    // Bytes in memory give the same blob as the path.
    let c = Blob::from_caffe_bytes(&e, &a.to_caffe_bytes(false).unwrap()).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
    let mut w = Vec::new();
    a.write_caffe(&mut w, false).unwrap();
    assert_eq!(w, std::fs::read(&p).unwrap());
}

#[test]
fn npy_round_trip_is_exact_for_every_numpy_dtype() {
    let e = common::engine();
    let a = Blob::load_npy(&e, data("ilsvrc_2012_mean.npy")).unwrap();
    let p = tmp("mean.npy");
    a.save_npy(&p).unwrap();
    let b = Blob::load_npy(&e, &p).unwrap();
    assert_eq!(b.dims(), [3, 256, 256]);
    assert_eq!(b.to_vec::<f64>().unwrap(), a.to_vec::<f64>().unwrap());
    for dtype in DType::ALL.into_iter().filter(|&d| d != DType::BF16 && !d.is_float8()) {
        let x = Blob::tensor(&e, dtype, &[2, 3, 5]).unwrap();
        let bytes: Vec<u8> = (0..x.byte_size()).map(|i| (i * 37 % 251) as u8 & 0x3f).collect();
        x.copy_from_bytes(&bytes).unwrap();
        let y = Blob::from_npy_bytes(&e, &x.to_npy_bytes().unwrap()).unwrap();
        assert_eq!((y.dtype(), y.dims()), (dtype, vec![2, 3, 5]));
        let mut back = vec![0u8; y.byte_size()];
        y.copy_to_bytes(&mut back).unwrap();
        assert_eq!(back, bytes, "{dtype}");
    }
}

#[test]
fn neoml_round_trip_is_exact() {
    let e = common::engine();
    let mean = Blob::load_caffe(&e, data("cifar10_mean.binaryproto")).unwrap();
    // As NeoML holds an image batch: BL=1, BW=1, LS=1, H=3, W=32, D=1, C=32.
    let a = Blob::image2d(&e, DType::F32, 1, 1, 3, 32, 32).unwrap();
    a.copy_from_slice(&mean.to_vec::<f32>().unwrap()).unwrap();
    let p = tmp("cifar.neoml");
    a.save_neoml(&p).unwrap();
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 46 + 4 * 3072);
    let b = Blob::load_neoml(&e, &p).unwrap();
    assert_eq!(b.dims(), a.dims());
    assert_eq!(b.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
    let i = Blob::from_slice(&e, &[1, 2, 1, 1, 1, 1, 2], &[i32::MIN, -1, 0, i32::MAX]).unwrap();
    let j = Blob::from_neoml_bytes(&e, &i.to_neoml_bytes().unwrap()).unwrap();
    assert_eq!(j.to_vec::<i32>().unwrap(), [i32::MIN, -1, 0, i32::MAX]);
}

#[test]
fn errors_name_the_file_and_change_nothing() {
    let e = common::engine();
    let missing = tmp("does-not-exist.npy");
    assert!(matches!(Blob::load_npy(&e, &missing), Err(Error::Io(m)) if m.contains("does-not-exist.npy")));
    // Loading a BlobProto as .npy or NeoML is a Format error.
    let proto = data("imagenet_mean.binaryproto");
    assert!(matches!(Blob::load_npy(&e, &proto), Err(Error::Format(_))));
    assert!(matches!(Blob::load_neoml(&e, &proto), Err(Error::Format(_))));
    // A refused save leaves the existing file as it was.
    let p = tmp("keep.npy");
    let a = Blob::from_slice(&e, &[2], &[1f32, 2.]).unwrap();
    a.save_npy(&p).unwrap();
    let before = std::fs::read(&p).unwrap();
    let bf = Blob::tensor(&e, DType::BF16, &[4]).unwrap();
    assert!(matches!(bf.save_npy(&p), Err(Error::DType(_))));
    assert!(matches!(bf.save_caffe(&p, false), Err(Error::DType(_))));
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // Saving into a directory that does not exist is an Io error.
    assert!(matches!(a.save_npy(tmp("no/such/dir.npy")), Err(Error::Io(_))));
}

#[test]
fn from_proto_into_an_existing_blob() {
    let e = common::engine();
    let bytes = std::fs::read(data("cifar10_mean.binaryproto")).unwrap();
    // Caffe Blob<double>::FromProto(proto, reshape=true) on a 1x1 blob.
    let b = Blob::tensor(&e, DType::F64, &[1, 1]).unwrap();
    b.copy_from_caffe_bytes(&bytes, true).unwrap();
    assert_eq!(b.dims(), [1, 3, 32, 32]);
    let f = Blob::load_caffe(&e, data("cifar10_mean.binaryproto")).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(b.to_vec::<f64>().unwrap(), f.iter().map(|&x| x as f64).collect::<Vec<_>>());
    // Without reshape a 3x32x32 blob matches (legacy dims pad with 1 on the left).
    let c = Blob::tensor(&e, DType::F32, &[3, 32, 32]).unwrap();
    c.copy_from_caffe_bytes(&bytes, false).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), f);
}

#[test]
fn caffe_shape_string_count_and_capacity_as_caffe_prints_them() {
    // Caffe's Blob::shape_string() for the MNIST data blob of its docs.
    let e = Engine::cpu();
    let b = Blob::tensor(&e, DType::F32, &[64, 3, 28, 28]).unwrap();
    assert_eq!(b.shape_string(), "64 3 28 28 (150528)");
    assert_eq!(Blob::tensor(&e, DType::F32, &[]).unwrap().shape_string(), "(1)");
    assert_eq!(Blob::tensor(&e, DType::F32, &[5, 0]).unwrap().shape_string(), "5 0 (0)");
    // count(start) = count(start, num_axes()).
    assert_eq!(b.count_from(0).unwrap(), 150528);
    assert_eq!(b.count_from(1).unwrap(), 3 * 28 * 28);
    assert_eq!(b.count_from(4).unwrap(), 1);
    assert_eq!(b.count_from(5).unwrap_err().code(), 6);
    // Caffe's capacity survives a shrinking reshape.
    b.reshape(&[2, 3]).unwrap();
    assert_eq!((b.count(), b.capacity()), (6, 150528));
}

#[test]
fn caffe_legacy_offset_and_data_at_pad_low_ranks_as_caffe() {
    // offset(n, c, h, w) = ((n * C + c) * H + h) * W + w on the legacy
    // shape; a [3, 5] blob has C = 5, H = W = 1.
    let e = Engine::cpu();
    let b = Blob::from_slice(&e, &[2, 3, 4, 5], &(0..120).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    assert_eq!(b.legacy_offset(1, 2, 3, 4).unwrap(), ((3 + 2) * 4 + 3) * 5 + 4);
    assert_eq!(b.data_at(1, 2, 3, 4).unwrap(), 119.0);
    assert_eq!(b.diff_at(1, 2, 3, 4).unwrap(), 0.0);
    assert!(b.diff_if_created().is_none(), "reading the diff creates none");
    b.diff().unwrap().fill(2.5).unwrap();
    assert_eq!(b.diff_at(1, 2, 3, 4).unwrap(), 2.5);
    let m = Blob::from_slice(&e, &[3, 5], &(0..15).collect::<Vec<i32>>()).unwrap();
    assert_eq!(m.legacy_offset(2, 4, 0, 0).unwrap(), 14);
    assert_eq!(m.data_at(1, 3, 0, 0).unwrap(), 8.0);
    assert_eq!(m.legacy_offset(0, 0, 1, 0).unwrap_err().code(), 6);
    assert_eq!(m.legacy_offset(3, 0, 0, 0).unwrap_err().code(), 6);
    let r5 = Blob::tensor(&e, DType::F32, &[1, 1, 1, 1, 1]).unwrap();
    assert_eq!(r5.data_at(0, 0, 0, 0).unwrap_err().code(), 4);
}

#[test]
fn caffe_shape_equals_against_the_real_files() {
    let e = Engine::cpu();
    // cifar10_mean.binaryproto has legacy fields 1 x 3 x 32 x 32.
    let legacy = std::fs::read(data("cifar10_mean.binaryproto")).unwrap();
    for (dims, want) in [(&[1usize, 3, 32, 32][..], true), (&[3, 32, 32], true), (&[3, 32, 33], false), (&[1, 1, 3, 32, 32], false)] {
        let b = Blob::tensor(&e, DType::F32, dims).unwrap();
        assert_eq!(b.shape_equals_caffe(&legacy).unwrap(), want, "{dims:?}");
    }
    // imagenet_mean.binaryproto: the shape form is compared dim for dim.
    let shaped = Blob::load_caffe(&e, data("imagenet_mean.binaryproto")).unwrap().to_caffe_bytes(false).unwrap();
    assert!(Blob::tensor(&e, DType::F32, &[1, 3, 256, 256]).unwrap().shape_equals_caffe(&shaped).unwrap());
    assert!(!Blob::tensor(&e, DType::F32, &[3, 256, 256]).unwrap().shape_equals_caffe(&shaped).unwrap());
    assert_eq!(Blob::tensor(&e, DType::F32, &[1]).unwrap().shape_equals_caffe(&[0xff, 0xff]).unwrap_err().code(), 12);
}

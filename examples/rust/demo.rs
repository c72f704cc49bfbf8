//! blobcore in a few lines: named dims, windows, merge/split and LIFO buffers.
//! Run with `cargo run -p blobcore --example demo` (or `make demo`).

use blobcore::{Blob, BlobDim, DType, Engine};

fn main() -> blobcore::Result<()> {
    let e = Engine::cpu();

    // A sequence of 4 steps, batch 2, 3 channels (NeoML's CreateDataBlob).
    let seq = Blob::data(&e, DType::F32, 4, 2, 3)?;
    let values: Vec<f32> = (0..seq.count()).map(|i| i as f32).collect();
    seq.copy_from_slice(&values)?;
    println!("sequence: dims {:?}, {} objects of {} channels", seq.dims(), seq.object_count()?, seq.named_dim(BlobDim::Channels)?);

    // A window walks the sequence one step at a time without copying.
    let step = seq.window(1)?;
    for t in 0..4 {
        step.set_parent_pos(t)?;
        println!("  step {t}: {:?}", step.to_vec::<f32>()?);
    }
    // Windows are bounds-checked: this is an error, not a crash.
    match step.set_parent_pos(4) {
        Err(err) => println!("  set_parent_pos(4) -> error {}: {err}", err.code()),
        Ok(()) => unreachable!("position 4 is past the end"),
    }

    // Merge along Channels (numpy.concatenate on the last axis), then split back.
    let extra = Blob::data(&e, DType::F32, 4, 2, 1)?;
    extra.fill(-1.0)?;
    let merged = Blob::merged(&[&seq, &extra], BlobDim::Channels as isize)?;
    println!("merged by channels: dims {:?}, first object {:?}", merged.dims(), &merged.to_vec::<f32>()?[..4]);
    let parts = merged.split_sizes(BlobDim::Channels as isize, &[3, 1])?;
    assert_eq!(parts[0].to_vec::<f32>()?, values);
    println!("split back: {:?} and {:?}", parts[0].dims(), parts[1].dims());

    // Transpose BatchLength and BatchWidth, like numpy.swapaxes.
    let t = seq.transposed(0, 1)?;
    println!("transposed(0, 1): dims {:?}", t.dims());

    // Buffers: NeoML's raw GetBuffer/ReleaseBuffer are LIFO-checked...
    let outer = seq.get_buffer(0, 6, true)?;
    let inner = seq.get_buffer(6, 6, true)?;
    match seq.release_buffer(outer.as_ptr(), true) {
        Err(err) => println!("releasing the outer buffer first -> error {}: {err}", err.code()),
        Ok(()) => unreachable!("LIFO order is enforced"),
    }
    seq.release_buffer(inner.as_ptr(), true)?;
    seq.release_buffer(outer.as_ptr(), true)?;

    // ...and Rust callers get borrow-checked guards instead.
    {
        let mut g = seq.buffer_write::<f32>(0, 3)?;
        g.copy_from_slice(&[10.0, 20.0, 30.0]);
        // While the guard lives, an overlapping write is refused, not raced.
        println!("fill while a guard is held -> {:?}", seq.fill(0.0).map_err(|e| e.code()));
    }
    println!("after the guard: first object {:?}", &seq.to_vec::<f32>()?[..3]);
    println!("asum = {}, sumsq = {}", seq.asum()?, seq.sumsq()?);
    Ok(())
}

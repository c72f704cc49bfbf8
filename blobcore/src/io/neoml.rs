//! NeoML blob archives, in both forms NeoML writes into a `CArchive`:
//! [`NeomlForm::Blob`], what `SerializeBlob(mathEngine, archive, blob)`
//! writes (a leading `isNull` byte, then the blob; NeoML's pickling uses
//! it), and [`NeomlForm::Serialize`], what `CDnnBlob::Serialize` writes
//! alone (no `isNull` byte: the file starts `FF D0 07 00 00`; the Python
//! `neoml.Blob.store` writes this). Reading tells them apart by the first
//! byte: 0 or 1 is the isNull byte, 0xFF the version's escape (a version
//! in 1001..=2000 never fits the one-byte form).
//!
//! Layout, little-endian: [one byte `isNull`]; the version as a NeoML
//! "small value" (one byte 0..=254, or 0xFF then an int32; NeoML writes
//! 2000 as `FF D0 07 00 00`; versions 1001..=2000 are read); int32 type
//! (1 float, 2 int); an int32 NeoML ignores (written as 0); seven int32
//! dims (BatchLength .. Channels); uint32 count; then count 4-byte values.
//! Unlike NeoML, the count is checked against the dims and the bytes
//! present before anything is allocated.
//!
//! Blobs load with rank 7 (NeoML's named dims). Saving takes f32 or i32
//! blobs of rank <= 7, padding the dims with trailing 1s as the named-dim
//! view does.

use crate::blob::Blob;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::io::{byte_order, file_shape, io_err, read_file, write_file, Cursor};
use std::io::Write;
use std::path::Path;

/// The archive version NeoML writes (and this module writes).
pub const VERSION: i32 = 2000;
/// The oldest archive version read.
pub const MIN_VERSION: i32 = 1001;

const FORMAT: &str = "NeoML archive";
const TYPE_FLOAT: i32 = 1;
const TYPE_INT: i32 = 2;

/// Which of NeoML's two archive forms (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeomlForm {
    /// `SerializeBlob`: an isNull byte, then the blob (the default).
    Blob,
    /// `CDnnBlob::Serialize`: the blob alone, starting with the version
    /// (`neoml.Blob.store` writes this).
    Serialize,
}

impl NeomlForm {
    /// The form's name: "blob" or "serialize".
    pub fn name(self) -> &'static str {
        match self {
            NeomlForm::Blob => "blob",
            NeomlForm::Serialize => "serialize",
        }
    }

    /// The form named "blob" or "serialize" (InvalidArgument otherwise).
    pub fn from_name(name: &str) -> Result<NeomlForm> {
        match name {
            "blob" => Ok(NeomlForm::Blob),
            "serialize" => Ok(NeomlForm::Serialize),
            other => Err(err!(InvalidArgument, "NeoML archive form {other:?} is neither \"blob\" nor \"serialize\"")),
        }
    }

    /// The form with C code 0 (blob) or 1 (serialize).
    pub fn from_code(code: i64) -> Result<NeomlForm> {
        match code {
            0 => Ok(NeomlForm::Blob),
            1 => Ok(NeomlForm::Serialize),
            other => Err(err!(InvalidArgument, "NeoML archive form {other} is neither 0 (blob) nor 1 (serialize)")),
        }
    }
}

/// Decodes one serialized blob in either form; `Ok(None)` is a null blob
/// (isNull = 1). The input must hold exactly one blob: trailing bytes are
/// a Format error.
pub fn decode(engine: &Engine, bytes: &[u8]) -> Result<Option<Blob>> {
    Ok(decode_form(engine, bytes)?.0)
}

/// As [`decode`], also telling which form the bytes were in.
pub fn decode_form(engine: &Engine, bytes: &[u8]) -> Result<(Option<Blob>, NeomlForm)> {
    let mut c = Cursor::new(bytes, FORMAT);
    let out = decode_one(engine, &mut c)?;
    c.finish()?;
    Ok(out)
}

fn decode_one(engine: &Engine, c: &mut Cursor<'_>) -> Result<(Option<Blob>, NeomlForm)> {
    let form = match c.peek_u8("the first byte")? {
        0 => NeomlForm::Blob,
        1 => {
            c.u8("the isNull byte")?;
            return Ok((None, NeomlForm::Blob));
        }
        0xFF => NeomlForm::Serialize,
        b => {
            return Err(err!(
                Format,
                "{FORMAT}: the first byte is {b:#04x}: neither an isNull byte (0 or 1, SerializeBlob) nor a version escape (0xff, CDnnBlob::Serialize)"
            ))
        }
    };
    if form == NeomlForm::Blob {
        c.u8("the isNull byte")?;
    }
    Ok((decode_body(engine, c)?, form))
}

fn decode_body(engine: &Engine, c: &mut Cursor<'_>) -> Result<Option<Blob>> {
    let version = match c.u8("the version")? {
        0xFF => c.i32_le("the version")?,
        v => i32::from(v),
    };
    if !(MIN_VERSION..=VERSION).contains(&version) {
        return Err(err!(Format, "{FORMAT}: version {version} is not one of {MIN_VERSION}..={VERSION}"));
    }
    let dtype = match c.i32_le("the data type")? {
        TYPE_FLOAT => DType::F32,
        TYPE_INT => DType::I32,
        t => return Err(err!(Format, "{FORMAT}: data type {t} is neither 1 (float) nor 2 (int)")),
    };
    let _unused = c.i32_le("the reserved int")?;
    let mut dims = [0i64; 7];
    for d in &mut dims {
        *d = i64::from(c.i32_le("the dims")?);
    }
    let shape = file_shape(FORMAT, &dims)?;
    let count = c.u32_le("the element count")?;
    if u64::from(count) != shape.count() as u64 {
        return Err(err!(
            Format,
            "{FORMAT}: element count {count} does not match the dims {dims:?} ({} elements)",
            shape.count()
        ));
    }
    // count fits in u32, so count * 4 cannot overflow usize on 64-bit and
    // is checked against the input before the blob is created.
    let data = c.take(count as usize * 4, "the data")?;
    let blob = Blob::new(engine, dtype, shape)?;
    blob.copy_from_bytes(&byte_order(data, 4, cfg!(target_endian = "big")))?;
    Ok(Some(blob))
}

/// Encodes a blob (or a null blob) as NeoML's `SerializeBlob` does.
pub fn encode(blob: Option<&Blob>, w: &mut dyn Write) -> Result<()> {
    match blob {
        Some(b) => encode_form(b, NeomlForm::Blob, w),
        None => w.write_all(&[1]).map_err(io_err),
    }
}

/// Encodes a blob in either form (a null blob has only the `Blob` form:
/// see [`encode`]).
pub fn encode_form(blob: &Blob, form: NeomlForm, w: &mut dyn Write) -> Result<()> {
    // A view of the whole blob: its dims cannot change under the header
    // and the data (another thread may reshape the blob itself between
    // two looks, which wrote a header that did not match the data).
    let view = blob.slice(&[])?;
    let blob = &view;
    let type_code = match blob.dtype() {
        DType::F32 => TYPE_FLOAT,
        DType::I32 => TYPE_INT,
        other => {
            return Err(err!(
                DType,
                "NeoML archives hold float32 or int32 blobs; convert the {other} blob first"
            ))
        }
    };
    let named = blob.shape().named_dims()?;
    let mut dims = [0i32; 7];
    for (d, &n) in dims.iter_mut().zip(&named) {
        *d = i32::try_from(n).map_err(|_| err!(Shape, "dim {n} does not fit NeoML's int32 dims"))?;
    }
    let count = u32::try_from(blob.count())
        .map_err(|_| err!(Shape, "{} elements do not fit NeoML's uint32 count", blob.count()))?;
    let mut head = Vec::with_capacity(48);
    if form == NeomlForm::Blob {
        head.push(0u8);
    }
    head.push(0xFF);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&type_code.to_le_bytes());
    head.extend_from_slice(&0i32.to_le_bytes());
    for d in dims {
        head.extend_from_slice(&d.to_le_bytes());
    }
    head.extend_from_slice(&count.to_le_bytes());
    w.write_all(&head).map_err(io_err)?;
    blob.for_each_chunk(|piece| w.write_all(&byte_order(piece, 4, cfg!(target_endian = "big"))).map_err(io_err))
}

impl Blob {
    /// Loads a NeoML blob archive (either form: `SerializeBlob`'s or
    /// `CDnnBlob::Serialize`'s) as a rank-7 f32 or i32 blob. A null blob
    /// in the archive is a Format error (use [`decode`] to accept it).
    pub fn load_neoml(engine: &Engine, path: impl AsRef<Path>) -> Result<Blob> {
        Blob::from_neoml_bytes(engine, &read_file(path.as_ref())?)
    }

    /// Decodes a NeoML blob archive, as [`Blob::load_neoml`].
    pub fn from_neoml_bytes(engine: &Engine, bytes: &[u8]) -> Result<Blob> {
        decode(engine, bytes)?.ok_or_else(|| err!(Format, "{FORMAT}: the archive holds a null blob"))
    }

    /// Saves the blob as a NeoML blob archive (f32 or i32, rank <= 7) in
    /// `SerializeBlob`'s form.
    pub fn save_neoml(&self, path: impl AsRef<Path>) -> Result<()> {
        self.save_neoml_as(path, NeomlForm::Blob)
    }

    /// Saves the blob as a NeoML blob archive in the given form
    /// ([`NeomlForm::Serialize`] is what `neoml.Blob.load` reads).
    pub fn save_neoml_as(&self, path: impl AsRef<Path>, form: NeomlForm) -> Result<()> {
        let bytes = self.to_neoml_bytes_as(form)?;
        write_file(path.as_ref(), |w| w.write_all(&bytes).map_err(io_err))
    }

    /// The blob serialized as a NeoML blob archive (`SerializeBlob`'s form).
    pub fn to_neoml_bytes(&self) -> Result<Vec<u8>> {
        self.to_neoml_bytes_as(NeomlForm::Blob)
    }

    /// The blob serialized as a NeoML blob archive in the given form.
    pub fn to_neoml_bytes_as(&self, form: NeomlForm) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        encode_form(self, form, &mut v)?;
        Ok(v)
    }

    /// Writes the blob as a NeoML blob archive to `w`.
    pub fn write_neoml(&self, w: &mut impl Write) -> Result<()> {
        encode(Some(self), w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn e() -> Engine {
        Engine::cpu()
    }

    #[test]
    fn header_bytes_match_neoml() {
        let b = Blob::from_slice(&e(), &[2, 1, 1, 1, 1, 1, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
        let v = b.to_neoml_bytes().unwrap();
        assert_eq!(&v[..6], &[0, 0xFF, 0xD0, 0x07, 0, 0]);
        assert_eq!(&v[6..10], &2i32.to_le_bytes());
        assert_eq!(&v[14..18], &2i32.to_le_bytes());
        assert_eq!(&v[38..42], &3i32.to_le_bytes());
        assert_eq!(&v[42..46], &6u32.to_le_bytes());
        assert_eq!(v.len(), 46 + 24);
        let c = Blob::from_neoml_bytes(&e(), &v).unwrap();
        assert_eq!(c.dims(), [2, 1, 1, 1, 1, 1, 3]);
        assert_eq!(c.dtype(), DType::I32);
        assert_eq!(c.to_vec::<i32>().unwrap(), [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn both_forms_and_the_first_byte_that_tells_them_apart() {
        let b = Blob::from_slice(&e(), &[3], &[1.5f32, -2.0, 0.25]).unwrap();
        let blob_form = b.to_neoml_bytes_as(NeomlForm::Blob).unwrap();
        let serialized = b.to_neoml_bytes_as(NeomlForm::Serialize).unwrap();
        // CDnnBlob::Serialize's form is SerializeBlob's without the isNull byte.
        assert_eq!(&serialized[..5], &[0xFF, 0xD0, 0x07, 0, 0]);
        assert_eq!(blob_form[1..], serialized[..]);
        for (bytes, form) in [(&blob_form, NeomlForm::Blob), (&serialized, NeomlForm::Serialize)] {
            let (c, f) = decode_form(&e(), bytes).unwrap();
            assert_eq!(f, form);
            assert_eq!(c.unwrap().to_vec::<f32>().unwrap(), [1.5, -2.0, 0.25]);
        }
        // Any other first byte is neither form.
        let mut bad = serialized.clone();
        bad[0] = 0x02;
        assert!(matches!(Blob::from_neoml_bytes(&e(), &bad), Err(Error::Format(m)) if m.contains("neither")));
        assert_eq!(NeomlForm::from_name("serialize").unwrap(), NeomlForm::Serialize);
        assert_eq!(NeomlForm::from_name("Serialize").unwrap_err().code(), 3);
        assert_eq!(NeomlForm::from_code(2).unwrap_err().code(), 3);
    }

    #[test]
    fn lower_ranks_pad_with_trailing_ones() {
        let b = Blob::from_slice(&e(), &[2, 3], &[1f32, 2., 3., 4., 5., 6.]).unwrap();
        let c = Blob::from_neoml_bytes(&e(), &b.to_neoml_bytes().unwrap()).unwrap();
        assert_eq!(c.dims(), [2, 3, 1, 1, 1, 1, 1]);
        assert_eq!(c.to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);
    }

    #[test]
    fn null_blobs() {
        let mut v = Vec::new();
        encode(None, &mut v).unwrap();
        assert_eq!(v, [1]);
        assert!(decode(&e(), &v).unwrap().is_none());
        assert!(matches!(Blob::from_neoml_bytes(&e(), &v), Err(Error::Format(m)) if m.contains("null")));
    }

    #[test]
    fn hostile_headers_fail_before_allocating() {
        let b = Blob::from_slice(&e(), &[2], &[1f32, 2.]).unwrap();
        let good = b.to_neoml_bytes().unwrap();
        let fmt = |v: &[u8]| match Blob::from_neoml_bytes(&e(), v) {
            Err(Error::Format(m)) => m,
            other => panic!("{other:?}"),
        };
        // Dims claiming 2^31-1 each: the product overflows -> bad shape.
        let mut v = good.clone();
        for i in 0..7 {
            v[14 + 4 * i..18 + 4 * i].copy_from_slice(&i32::MAX.to_le_bytes());
        }
        assert!(fmt(&v).contains("bad shape"));
        // A count that matches huge dims but not the bytes present.
        let mut v = good.clone();
        v[14..18].copy_from_slice(&(1i32 << 30).to_le_bytes());
        v[42..46].copy_from_slice(&(1u32 << 30).to_le_bytes());
        assert!(fmt(&v).contains("truncated"));
        // Count disagreeing with the dims (NeoML does not check this).
        let mut v = good.clone();
        v[42..46].copy_from_slice(&1u32.to_le_bytes());
        assert!(fmt(&v).contains("does not match the dims"));
        let mut v = good.clone();
        v[14..18].copy_from_slice(&(-2i32).to_le_bytes());
        assert!(fmt(&v).contains("negative"));
        let mut v = good.clone();
        v[2..6].copy_from_slice(&2001i32.to_le_bytes());
        assert!(fmt(&v).contains("version 2001"));
        let mut v = good.clone();
        v[6] = 3;
        assert!(fmt(&v).contains("data type 3"));
        let mut v = good.clone();
        v[0] = 2;
        assert!(fmt(&v).contains("isNull"));
        let mut v = good.clone();
        v.push(0);
        assert!(fmt(&v).contains("trailing"));
        for cut in 0..good.len() {
            assert!(fmt(&good[..cut]).contains("truncated"), "cut {cut}");
        }
    }

    #[test]
    fn other_dtypes_and_ranks_are_refused() {
        let b = Blob::from_slice(&e(), &[2], &[1f64, 2.]).unwrap();
        assert!(matches!(b.to_neoml_bytes(), Err(Error::DType(_))));
        let b = Blob::tensor(&e(), DType::F32, &[1; 8]).unwrap();
        assert!(matches!(b.to_neoml_bytes(), Err(Error::Shape(_))));
    }
}

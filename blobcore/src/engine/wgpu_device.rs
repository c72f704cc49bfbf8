//! The GPU engine's wgpu device (Vulkan, Metal, DX12 — and Mesa's lavapipe, a
//! software Vulkan device, on machines without a GPU).
//!
//! One device and queue per engine, shared by its blobs. The kernels
//! (`kernels.wgsl`) are compiled once, when the engine is created. A blob
//! on this engine keeps a device buffer next to its host memory, both
//! lazily allocated, with Caffe's SyncedMemory heads deciding which side is
//! current (see `storage.rs`). Every wgpu error is caught and reported as
//! `Error::Device` (or `OutOfMemory`), never as a panic.

use crate::error::{err, Result};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use wgpu::util::DeviceExt;

use super::adapter::{self, AdapterInfo, AdapterKind};
use super::gpu::{Counters, Elementwise, Reduction, Strided};

/// Threads per workgroup of every kernel (`WG` in kernels.wgsl).
const WG: u64 = 256;
/// At most this many workgroups per dispatch; kernels loop over the rest.
const MAX_GROUPS: u64 = 65535;

/// A GPU device with its queue and compiled kernels.
pub struct Wgpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    /// Hardware or software (see [`AdapterKind`]).
    kind: AdapterKind,
    layout: wgpu::BindGroupLayout,
    /// One element-wise pipeline per [`Elementwise`] op (indexed by it),
    /// scalar and four words at a time.
    elementwise: Vec<wgpu::ComputePipeline>,
    elementwise4: Vec<wgpu::ComputePipeline>,
    reduce4: wgpu::ComputePipeline,
    copy_rows: wgpu::ComputePipeline,
    copy_rows4: wgpu::ComputePipeline,
    transpose_tiles: wgpu::ComputePipeline,
    strided_copy: wgpu::ComputePipeline,
    reduce: wgpu::ComputePipeline,
    reduce_i32: wgpu::ComputePipeline,
    /// A 16-byte buffer bound where a kernel has no source (one vec4).
    dummy: wgpu::Buffer,
    /// The last error wgpu reported outside an error scope.
    uncaptured: Arc<Mutex<Option<String>>>,
    max_buffer: u64,
    /// Transfer and kernel counters (see [`crate::engine::EngineStats`]).
    counters: Counters,
    /// The command encoder an operation records its kernels and copies
    /// into (see [`Gpu::batch`]), with the thread recording.
    recording: Mutex<Option<(std::thread::ThreadId, wgpu::CommandEncoder)>>,
}

impl std::fmt::Debug for Wgpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Wgpu({} via {:?})", self.info.name, self.info.backend)
    }
}

/// Words of the uniform parameter block (`Params` in kernels.wgsl).
const PARAM_WORDS: usize = 128;

/// Every adapter wgpu can reach here, with the instance that owns them.
fn enumerate() -> (wgpu::Instance, Vec<wgpu::Adapter>) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    (instance, adapters)
}

/// An adapter's name, kind, backend and driver.
fn describe(a: &wgpu::Adapter) -> AdapterInfo {
    let i = a.get_info();
    let driver = [i.driver.as_str(), i.driver_info.as_str()].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(" ");
    AdapterInfo { kind: adapter::classify(i.device_type, &i.name), name: i.name, backend: format!("{:?}", i.backend), driver }
}

/// Every GPU adapter wgpu finds on this machine, in its order, hardware and
/// software alike ([`crate::Engine::gpu`] opens the one
/// [`adapter::choose`] picks). Empty when there is none.
///
/// # Errors
/// `Error::Device` in a process forked while another thread of its
/// parent was opening, listing or closing a device: listing loads the
/// drivers, whose state the fork copied half changed (it could hang).
pub fn adapters() -> Result<Vec<AdapterInfo>> {
    let _counted = super::in_driver::enter("list the GPU adapters")?;
    Ok(enumerate().1.iter().map(describe).collect())
}

fn device_err(what: &str, e: impl std::fmt::Display) -> crate::Error {
    err!(Device, "{what}: {e}")
}

impl Wgpu {
    /// Opens the adapter [`adapter::choose`] picks: the first whose name
    /// contains `hint`, or without one a hardware adapter before a software
    /// one (`WGPU_BACKEND` is honoured, and `WGPU_ADAPTER_NAME` stands in
    /// for a missing `hint`).
    pub(crate) fn open(hint: Option<&str>) -> Result<Wgpu> {
        let env_hint = std::env::var("WGPU_ADAPTER_NAME").ok().filter(|h| !h.is_empty());
        let hint = hint.or(env_hint.as_deref());
        let (instance, adapters) = enumerate();
        let infos: Vec<AdapterInfo> = adapters.iter().map(describe).collect();
        let Some(pick) = adapter::choose(&infos, hint) else {
            let which = hint.map(|h| format!(" whose name contains {h:?}")).unwrap_or_default();
            let names: Vec<&str> = infos.iter().map(|a| a.name.as_str()).collect();
            let seen = if names.is_empty() { "none found".to_string() } else { format!("found: {}", names.join(", ")) };
            return Err(err!(
                Device,
                "no GPU adapter{which} ({seen}); on Linux, `apt-get install mesa-vulkan-drivers` provides lavapipe"
            ));
        };
        drop(instance);
        let kind = infos[pick].kind;
        let adapter = adapters.into_iter().nth(pick).ok_or_else(|| err!(Internal, "adapter {pick} vanished"))?;
        let info = adapter.get_info();
        // Ask for the adapter's own limits, so large blobs fit one buffer.
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("blobcore"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| device_err(&format!("cannot open {}", info.name), e))?;
        let uncaptured = Arc::new(Mutex::new(None));
        let sink = Arc::clone(&uncaptured);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            *sink.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }));
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("blobcore kernels"),
            source: wgpu::ShaderSource::Wgsl(include_str!("kernels.wgsl").into()),
        });
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let storage = |read_only| wgpu::BufferBindingType::Storage { read_only };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("blobcore"),
            entries: &[entry(0, storage(false)), entry(1, storage(true)), entry(2, wgpu::BufferBindingType::Uniform)],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("blobcore"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let specialised = |name: &str, constants: &[(&str, f64)]| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(name),
                compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
                cache: None,
            })
        };
        let pipeline = |name: &str| specialised(name, &[]);
        let elementwise = (0..Elementwise::COUNT).map(|op| specialised("elementwise", &[("OP", op as f64)])).collect();
        let elementwise4 = (0..Elementwise::COUNT).map(|op| specialised("elementwise4", &[("OP", op as f64)])).collect();
        let reduce4 = pipeline("reduce4");
        let (copy_rows4, transpose_tiles) = (pipeline("copy_rows4"), pipeline("transpose_tiles"));
        let (copy_rows, strided_copy, reduce) = (pipeline("copy_rows"), pipeline("strided_copy"), pipeline("reduce"));
        let reduce_i32 = pipeline("reduce_i32");
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("blobcore dummy"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(device_err(&format!("the kernels do not compile on {}", info.name), e));
        }
        Ok(Wgpu {
            device,
            queue,
            info,
            kind,
            layout,
            elementwise,
            elementwise4,
            reduce4,
            copy_rows,
            copy_rows4,
            transpose_tiles,
            strided_copy,
            reduce,
            reduce_i32,
            dummy,
            uncaptured,
            max_buffer: limits.max_buffer_size.min(limits.max_storage_buffer_binding_size),
            counters: Counters::default(),
            recording: Mutex::new(None),
        })
    }

    /// The counters since the engine was created (or last reset).
    pub(crate) fn stats(&self) -> crate::engine::EngineStats {
        let c = &self.counters;
        crate::engine::EngineStats {
            bytes_uploaded: c.bytes_uploaded.load(Ordering::Relaxed),
            bytes_downloaded: c.bytes_downloaded.load(Ordering::Relaxed),
            uploads: c.uploads.load(Ordering::Relaxed),
            downloads: c.downloads.load(Ordering::Relaxed),
            kernels: c.kernels.load(Ordering::Relaxed),
        }
    }

    /// Sets every counter back to zero.
    pub(crate) fn reset_stats(&self) {
        let c = &self.counters;
        for a in [&c.bytes_uploaded, &c.bytes_downloaded, &c.uploads, &c.downloads, &c.kernels] {
            a.store(0, Ordering::Relaxed);
        }
    }

    /// The adapter's name (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)").
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// Whether the adapter is a discrete, integrated, … or software device.
    pub fn adapter_kind(&self) -> AdapterKind {
        self.kind
    }

    /// The backend in use (Vulkan, Metal, Dx12).
    pub fn backend(&self) -> String {
        format!("{:?}", self.info.backend)
    }

    /// Waits until every queued kernel and copy has finished.
    pub(crate) fn wait(&self) -> Result<()> {
        self.flush_mine("submitting recorded kernels")?;
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| device_err("waiting for the device", e))
    }

    /// Seconds one device buffer-to-buffer copy of `bytes` takes (the
    /// median of `runs`): the baseline GPU benchmarks report against.
    pub fn copy_seconds(&self, bytes: usize, runs: usize) -> Result<f64> {
        let (a, b) = (self.alloc(bytes)?, self.alloc(bytes)?);
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) + 1 {
            self.wait()?;
            let t = std::time::Instant::now();
            self.copy(&a, 0, &b, 0, bytes / 4 * 4)?;
            self.wait()?;
            times.push(t.elapsed().as_secs_f64());
        }
        times.remove(0); // warm-up
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// Runs `f` with this thread's kernels and device copies recorded into
    /// one command encoder, submitted once at the end (one submission per
    /// operation instead of one per dispatch). Nested or concurrent calls
    /// simply run `f` (their commands then submit on their own); anything
    /// that moves data to or from the host submits the recording first.
    pub(crate) fn batch<R>(&self, what: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        {
            let mut r = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            if r.is_some() {
                drop(r);
                return f();
            }
            *r = Some((std::thread::current().id(), self.device.create_command_encoder(&Default::default())));
        }
        let out = f();
        let flushed = self.flush_mine(what);
        let out = out?;
        flushed?;
        Ok(out)
    }

    /// Submits this thread's recording, if any.
    fn flush_mine(&self, what: &str) -> Result<()> {
        let enc = {
            let mut r = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            match r.as_ref() {
                Some((t, _)) if *t == std::thread::current().id() => r.take().map(|(_, e)| e),
                _ => None,
            }
        };
        match enc {
            Some(enc) => self.scoped(what, || {
                self.submit([enc.finish()]);
            }),
            None => Ok(()),
        }
    }

    /// Runs `record` on this thread's recording encoder when it has one,
    /// else on a new encoder submitted at once.
    fn encode(&self, record: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let mut r = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((t, enc)) = r.as_mut() {
            if *t == std::thread::current().id() {
                record(enc);
                return;
            }
        }
        drop(r);
        let mut enc = self.device.create_command_encoder(&Default::default());
        record(&mut enc);
        self.submit([enc.finish()]);
    }

    /// Submits `commands`, counted as a driver section (see `in_driver`)
    /// until the device reports them done: the driver runs them on
    /// threads of its own after this returns (lavapipe compiles a kernel
    /// there on its first dispatch on a device, under LLVM's process-wide
    /// locks), so a child forked meanwhile is refused a device of its own
    /// rather than left waiting on a lock no thread of it holds. The
    /// count ends when a later submission or wait of this device sees the
    /// work done ([`crate::Engine::synchronize`] before a fork ends it at
    /// once).
    fn submit(&self, commands: impl IntoIterator<Item = wgpu::CommandBuffer>) {
        let running = super::in_driver::running();
        self.queue.submit(commands);
        // The callback only drops the count (no lock, no foreign code);
        // wgpu runs it, or drops it with the queue, exactly once.
        self.queue.on_submitted_work_done(move || drop(running));
    }

    /// Runs `f` inside an error scope; a wgpu error becomes `Error::Device`
    /// (or `OutOfMemory` for allocation failures).
    fn scoped<R>(&self, what: &str, f: impl FnOnce() -> R) -> Result<R> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let r = f();
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        if let Some(e) = o {
            return Err(err!(OutOfMemory, "{what} on {}: {e}", self.info.name));
        }
        if let Some(e) = v {
            return Err(device_err(&format!("{what} on {}", self.info.name), e));
        }
        if let Some(e) = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(device_err(&format!("{what} on {}", self.info.name), e));
        }
        Ok(r)
    }

    /// The largest buffer (in bytes) one blob's device copy may take.
    pub fn max_buffer(&self) -> u64 {
        self.max_buffer
    }

    /// True when one device buffer can hold `len` bytes; bigger blobs on
    /// this engine run their operations on the host.
    pub fn fits(&self, len: usize) -> bool {
        (len as u64).div_ceil(4).max(1) * 4 <= self.max_buffer
    }

    /// A zero-filled device buffer holding at least `len` bytes.
    pub(crate) fn alloc(&self, len: usize) -> Result<wgpu::Buffer> {
        // Whole vec4s, so the four-word kernels can bind any buffer.
        let size = (len as u64).div_ceil(16).max(1) * 16;
        if size > self.max_buffer {
            return Err(err!(
                OutOfMemory,
                "{len} bytes exceed the largest buffer {} allows ({} bytes)",
                self.info.name,
                self.max_buffer
            ));
        }
        self.scoped("allocating a device buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("blobcore blob"),
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// Copies host bytes into the buffer at byte `at` (a multiple of 4;
    /// a last partial word is padded with zeros).
    pub(crate) fn upload(&self, buf: &wgpu::Buffer, at: usize, bytes: &[u8]) -> Result<()> {
        // Queue writes run before the next submission: recorded kernels go first.
        self.flush_mine("submitting recorded kernels")?;
        self.counters.uploads.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_uploaded.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let whole = bytes.len() / 4 * 4;
        self.scoped("uploading to the device", || {
            if whole > 0 {
                self.queue.write_buffer(buf, at as u64, &bytes[..whole]);
            }
            if whole < bytes.len() {
                let mut tail = [0u8; 4];
                tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
                self.queue.write_buffer(buf, (at + whole) as u64, &tail);
            }
            self.submit([]);
        })
    }

    /// Copies bytes `[start, start + out.len())` of the buffer into `out`,
    /// waiting for every queued kernel first. Counted as a transfer of blob
    /// data.
    pub(crate) fn download(&self, buf: &wgpu::Buffer, start: usize, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        self.counters.downloads.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_downloaded.fetch_add(out.len() as u64, Ordering::Relaxed);
        self.read_back(buf, start, out)
    }

    /// [`Wgpu::download`] of a kernel's result (reduction partials), which
    /// is not blob data and not counted.
    fn read_back(&self, buf: &wgpu::Buffer, start: usize, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        self.flush_mine("submitting recorded kernels")?;
        let lo = start as u64 / 4 * 4;
        let hi = ((start + out.len()) as u64).div_ceil(4) * 4;
        let staging = self.scoped("allocating a staging buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("blobcore staging"),
                size: hi - lo,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        self.scoped("reading back from the device", || {
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(buf, lo, &staging, 0, hi - lo);
            self.submit([enc.finish()]);
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| device_err("waiting for the device", e))?;
        rx.recv()
            .map_err(|e| device_err("mapping the staging buffer", e))?
            .map_err(|e| device_err("mapping the staging buffer", e))?;
        {
            let view = staging.get_mapped_range(..).map_err(|e| device_err("reading the staging buffer", e))?;
            let skip = (start as u64 - lo) as usize;
            out.copy_from_slice(&view[skip..skip + out.len()]);
        }
        staging.unmap();
        Ok(())
    }

    /// Copies `len` bytes between buffers (offsets and length multiples of 4).
    pub(crate) fn copy(&self, src: &wgpu::Buffer, src_off: usize, dst: &wgpu::Buffer, dst_off: usize, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.counters.kernels.fetch_add(1, Ordering::Relaxed);
        self.scoped("copying on the device", || {
            self.encode(|enc| enc.copy_buffer_to_buffer(src, src_off as u64, dst, dst_off as u64, len as u64));
        })
    }

    fn dispatch(&self, what: &str, pipeline: &wgpu::ComputePipeline, dst: &wgpu::Buffer, src: Option<&wgpu::Buffer>, params: &[u32], groups: u64) -> Result<()> {
        self.dispatch_3d(what, pipeline, dst, src, params, (groups, 1, 1))
    }

    /// Dispatches `groups` (x, y, z) workgroups (each clamped to the grid
    /// limit: kernels loop over the rest) with `params` in a uniform block.
    fn dispatch_3d(&self, what: &str, pipeline: &wgpu::ComputePipeline, dst: &wgpu::Buffer, src: Option<&wgpu::Buffer>, params: &[u32], groups: (u64, u64, u64)) -> Result<()> {
        if params.len() > PARAM_WORDS {
            return Err(err!(Unsupported, "{what}: {} parameter words exceed the kernel's {PARAM_WORDS}", params.len()));
        }
        let clamp = |g: u64| g.clamp(1, MAX_GROUPS) as u32;
        let (gx, gy, gz) = (clamp(groups.0), clamp(groups.1), clamp(groups.2));
        let mut block = [0u32; PARAM_WORDS];
        block[..params.len()].copy_from_slice(params);
        self.counters.kernels.fetch_add(1, Ordering::Relaxed);
        self.scoped(what, || {
            let params = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("blobcore params"),
                contents: bytemuck::cast_slice(&block),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let bind = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(what),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: dst.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: src.unwrap_or(&self.dummy).as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: params.as_entire_binding() },
                ],
            });
            self.encode(|enc| {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(what), timestamp_writes: None });
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(gx, gy, gz);
            });
        })
    }

    fn words(n: usize) -> Result<u32> {
        u32::try_from(n).map_err(|_| err!(Unsupported, "{n} words exceed what one GPU kernel addresses (2^32)"))
    }

    /// The element-wise kernel over `n` words at `dst_off` (and `src_off`).
    pub(crate) fn elementwise(
        &self,
        op: Elementwise,
        dst: &wgpu::Buffer,
        dst_off: usize,
        src: Option<(&wgpu::Buffer, usize)>,
        n: usize,
        v: [u32; 2],
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let src_off = src.map_or(0, |s| s.1);
        // Four words per thread where the offsets are 16-byte aligned; the
        // scalar kernel takes the tail.
        if n >= 64 && dst_off.is_multiple_of(4) && src_off.is_multiple_of(4) {
            let n4 = n / 4;
            let params = [Self::words(n4)?, Self::words(dst_off / 4)?, Self::words(src_off / 4)?, v[0], v[1]];
            self.dispatch("elementwise", &self.elementwise4[op as usize], dst, src.map(|s| s.0), &params, (n4 as u64).div_ceil(WG))?;
            let done = n4 * 4;
            return self.elementwise(op, dst, dst_off + done, src.map(|(b, o)| (b, o + done)), n - done, v);
        }
        let params = [Self::words(n)?, Self::words(dst_off)?, Self::words(src_off)?, v[0], v[1]];
        let pipeline = &self.elementwise[op as usize];
        self.dispatch("elementwise", pipeline, dst, src.map(|s| s.0), &params, (n as u64).div_ceil(WG))
    }

    /// Copies `planes` x `rows` runs of `run` words (offsets, row and
    /// plane strides in words: `d` and `s` are (offset, row, plane)): one
    /// device copy per run, batched in one submission, when the runs are
    /// few and long; else the row kernel (3-D grid, no division per
    /// element).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn copy_rows(&self, dst: &wgpu::Buffer, src: &wgpu::Buffer, planes: usize, rows: usize, run: usize, d: (usize, usize, usize), s: (usize, usize, usize)) -> Result<()> {
        if planes == 0 || rows == 0 || run == 0 {
            return Ok(());
        }
        if dst != src && planes * rows <= 64 && run >= 16 << 10 {
            self.counters.kernels.fetch_add((planes * rows) as u64, Ordering::Relaxed);
            return self.scoped("copying runs on the device", || {
                self.encode(|enc| {
                    for q in 0..planes {
                        for r in 0..rows {
                            let from = (s.0 + q * s.2 + r * s.1) as u64 * 4;
                            let to = (d.0 + q * d.2 + r * d.1) as u64 * 4;
                            enc.copy_buffer_to_buffer(src, from, dst, to, run as u64 * 4);
                        }
                    }
                });
            });
        }
        let params = Self::grid_params(planes, rows, run, d, s)?;
        let aligned = [run, d.0, d.1, d.2, s.0, s.1, s.2].iter().all(|&x| x % 4 == 0);
        if aligned {
            // Four words per thread.
            let mut p4 = params;
            for i in [1, 2, 3, 4, 5, 7, 8] {
                p4[i] /= 4;
            }
            return self.dispatch_3d("row copy", &self.copy_rows4, dst, Some(src), &p4, Self::row_groups(run / 4, rows, planes));
        }
        self.dispatch_3d("row copy", &self.copy_rows, dst, Some(src), &params, Self::row_groups(run, rows, planes))
    }

    /// The parameters of the row and tile kernels: [rows, run or columns,
    /// dst offset, dst row, src offset, src row, planes, dst plane, src
    /// plane], in words.
    fn grid_params(planes: usize, rows: usize, run: usize, d: (usize, usize, usize), s: (usize, usize, usize)) -> Result<[u32; 9]> {
        let mut out = [0u32; 9];
        for (o, v) in out.iter_mut().zip([rows, run, d.0, d.1, s.0, s.1, planes, d.2, s.2]) {
            *o = Self::words(v)?;
        }
        Ok(out)
    }

    /// The grid of the row kernels: long runs spread over x; runs shorter
    /// than a workgroup pack WG / run rows into each workgroup.
    fn row_groups(run: usize, rows: usize, planes: usize) -> (u64, u64, u64) {
        let wg = WG as usize;
        if run < wg {
            (1, rows.div_ceil(wg / run) as u64, planes as u64)
        } else {
            ((run as u64).div_ceil(WG).min(1024), rows as u64, planes as u64)
        }
    }

    /// A tiled 2-D transpose of words through workgroup memory, batched
    /// over `planes`: `dst[d.0 + q*d.2 + c*d.1 + r] = src[s.0 + q*s.2 +
    /// r*s.1 + c]` for r < rows, c < cols (source rows and columns).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn transpose(&self, dst: &wgpu::Buffer, src: &wgpu::Buffer, planes: usize, rows: usize, cols: usize, d: (usize, usize, usize), s: (usize, usize, usize)) -> Result<()> {
        if planes == 0 || rows == 0 || cols == 0 {
            return Ok(());
        }
        let params = Self::grid_params(planes, rows, cols, d, s)?;
        let tiles = (rows as u64).div_ceil(32) * (cols as u64).div_ceil(32);
        self.dispatch_3d("tiled transpose", &self.transpose_tiles, dst, Some(src), &params, (tiles, 1, planes as u64))
    }

    /// The strided-copy kernel; `c` is in words.
    pub(crate) fn strided_copy(&self, dst: &wgpu::Buffer, src: &wgpu::Buffer, c: &Strided) -> Result<()> {
        let n: usize = c.dims.iter().product();
        if n == 0 {
            return Ok(());
        }
        let mut params = vec![Self::words(n)?, c.dims.len() as u32, Self::words(c.dst_off)?, Self::words(c.src_off)?];
        for &x in &c.dims {
            params.push(Self::words(x)?);
        }
        for v in [&c.dst_strides, &c.src_strides] {
            for &x in v {
                // Two's complement: the kernel's u32 sums wrap back to the
                // (existing, non-negative) element offset.
                let w = i32::try_from(x).map_err(|_| err!(Unsupported, "a stride of {x} words exceeds what one GPU kernel addresses (2^31)"))?;
                params.push(w as u32);
            }
        }
        self.dispatch("strided copy", &self.strided_copy, dst, Some(src), &params, (n as u64).div_ceil(WG))
    }

    /// Sum of |x| or x^2 over `n` words at `src_off`. f32: per-workgroup
    /// f32 partials on the device, added in f64 here (about 1e-5
    /// relative). i32: exact, per-workgroup 96-bit integer partials (three
    /// words) added here as integers and rounded once (equal to the host's
    /// result below 2^53).
    pub(crate) fn reduce(&self, op: Reduction, src: &wgpu::Buffer, src_off: usize, n: usize) -> Result<f64> {
        if n == 0 {
            return Ok(0.0);
        }
        // Enough workgroups that each thread sums at most ~64 values.
        let groups = (n as u64).div_ceil(WG * 64).clamp(1, MAX_GROUPS);
        let params = [op as u32, Self::words(n)?, Self::words(src_off)?];
        let integer = matches!(op, Reduction::AsumI32 | Reduction::SumsqI32);
        let words = if integer { 3 } else { 1 } * groups as usize;
        let partials = self.alloc(words * 4)?;
        if !integer && n.is_multiple_of(4) && src_off.is_multiple_of(4) {
            let params = [op as u32, Self::words(n / 4)?, Self::words(src_off / 4)?];
            self.dispatch("reduce", &self.reduce4, &partials, Some(src), &params, groups)?;
        } else {
            let pipeline = if integer { &self.reduce_i32 } else { &self.reduce };
            self.dispatch("reduce", pipeline, &partials, Some(src), &params, groups)?;
        }
        let mut bytes = vec![0u8; words * 4];
        self.read_back(&partials, 0, &mut bytes)?;
        let word = |c: &[u8]| u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if integer {
            // Three words per workgroup, each sum below 2^95: the total of
            // at most MAX_GROUPS of them fits a u128 exactly.
            let total: u128 = bytes
                .chunks_exact(12)
                .map(|c| u128::from(word(&c[..4])) | (u128::from(word(&c[4..8])) << 32) | (u128::from(word(&c[8..])) << 64))
                .sum();
            return Ok(total as f64);
        }
        Ok(bytes.chunks_exact(4).map(|c| f32::from_bits(word(c)) as f64).sum())
    }
}

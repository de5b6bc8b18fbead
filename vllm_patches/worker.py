"""The TT worker: owns the (mesh) device and the KV cache, builds the model, warms it up, and runs steps through
the TTModelRunner. Runs inside vLLM's engine-core process (UniProcExecutor)."""

from __future__ import annotations

import faulthandler
import functools
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import torch
from vllm.v1.core.kv_cache_utils import get_kv_cache_groups
from vllm.v1.kv_cache_interface import KVCacheSpec
from vllm.v1.worker.worker_base import CompilationTimes, WorkerBase

from tt_models.layers.sampling import MAX_TOP_K
from tt_models.sampling import TTSamplingParams
from vllm_patches.kv_blocks import plan_kv_blocks, wanted_blocks
from vllm_patches.kv_specs import layer_kv_spec
from vllm_patches.loader import load_tt_model
from vllm_patches.model_runner import TTModelRunner
from vllm_patches.registry import register_tt_models
from vllm_patches.shutdown import defer_stop_signals_during_teardown, deferring_stop_signals, stop_with_parent
from vllm_patches.tt_config import TTConfig

logger = logging.getLogger(__name__)


def fabric_for(ttnn: Any, num_devices: int, name: str | None) -> Any:
    """The fabric a mesh of num_devices chips opens with: none for one chip; additional_config tt.fabric_config
    names a ttnn.FabricConfig member, else FABRIC_1D (what tt_transformers uses on N300 / T3K rows)."""
    if num_devices == 1 and name is None:
        return None
    choice = name or "FABRIC_1D"
    try:
        return getattr(ttnn.FabricConfig, choice)
    except AttributeError:
        known = [m for m in dir(ttnn.FabricConfig) if m.isupper()]
        raise ValueError(f'additional_config["tt"]["fabric_config"]={name!r}: expected one of {known}') from None


def dp_rank_devices(parallel: Any, per_rank: int) -> list[int] | None:
    """The chips this engine opens under vLLM's --data-parallel-size: local DP rank r takes the r-th group of
    `per_rank` chips (the mesh MESH_DEVICE names) from TT_VISIBLE_DEVICES (comma-separated ids), or from 0, 1, ...
    when it is unset. None (ttnn's default placement) for rank 0 with nothing set. vLLM runs the ranks of a dense
    model as independent engines (their config says data_parallel_size 1); data_parallel_rank_local and
    data_parallel_index keep the rank."""
    rank = getattr(parallel, "data_parallel_rank_local", None)
    if rank is None:
        rank = getattr(parallel, "data_parallel_index", 0) or 0
    visible = os.environ.get("TT_VISIBLE_DEVICES", "")
    if rank == 0 and not visible:
        return None
    pool = [int(x) for x in visible.split(",") if x.strip()] if visible else list(range((rank + 1) * per_rank))
    ids = pool[rank * per_rank:(rank + 1) * per_rank]
    if len(ids) != per_rank:
        raise RuntimeError(f"data parallel rank {rank} needs {per_rank} TT device(s), but TT_VISIBLE_DEVICES="
                           f"{visible} leaves {ids}: list {per_rank} device id(s) per rank")
    return ids


def _closes_the_device_if_it_fails(step: Callable) -> Callable:
    """An engine start-up step (loading, KV planning and allocation, warmup) that raises leaves vLLM with no engine to
    shut down, so nobody would close the device: an in-process engine (VLLM_ENABLE_V1_MULTIPROCESSING=0, a notebook
    retrying with other options) could then not open it again. Close it here before the error propagates."""

    @functools.wraps(step)
    def run(self: TTWorker, *args: Any, **kwargs: Any) -> Any:
        try:
            return step(self, *args, **kwargs)
        except BaseException:
            self.shutdown()
            raise

    return run


class TTWorker(WorkerBase):
    def __init__(self, vllm_config: Any, local_rank: int, rank: int, distributed_init_method: str,
                 is_driver_worker: bool = False) -> None:
        super().__init__(vllm_config, local_rank, rank, distributed_init_method, is_driver_worker)
        register_tt_models()  # this process may not have run the general plugins yet
        # Platform class state does not cross into this process: re-read and re-validate here.
        self.tt = TTConfig.from_additional_config(vllm_config.additional_config)
        self.mesh_device: Any = None
        self._fabric: Any = None  # the FabricConfig the mesh opened with (multi-chip meshes)
        self.model_runner = TTModelRunner(vllm_config, self.tt)

    # --- device ---
    def init_device(self) -> None:
        from tt_models.backend import get_ttnn, is_simulator
        from tt_models.config import mesh_shape_from_env

        self.device = torch.device("cpu")
        # From here on this process holds a device: close it even if the process that started it dies first, and
        # let no second stop signal cut the teardown short before the device is closed.
        stop_with_parent()
        if defer_stop_signals_during_teardown():
            # An engine core that does not answer (a stuck teardown, a step that never returns) tells where it is:
            # `kill -USR1 <pid>` writes every thread's Python stack to its stderr, i.e. the server's log.
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        ttnn = get_ttnn()
        rows, cols = mesh_shape_from_env(1 if is_simulator(ttnn) else ttnn.get_num_devices())
        ids = dp_rank_devices(self.vllm_config.parallel_config, rows * cols)
        self._fabric = fabric_for(ttnn, rows * cols, self.tt.fabric_config)
        if self._fabric is not None:
            # Collectives (tensor parallel) need the chip-to-chip fabric, chosen before the mesh opens.
            ttnn.set_fabric_config(self._fabric)
        self.mesh_device = ttnn.open_mesh_device(
            ttnn.MeshShape(rows, cols), l1_small_size=self.tt.l1_small_size,
            trace_region_size=self.tt.trace_region_size, worker_l1_size=self.tt.worker_l1_size,
            dispatch_core_config=self.tt.dispatch_core_config(ttnn),
            physical_device_ids=ids)
        logger.info("opened TT mesh %s on devices %s (%s%s)", (rows, cols), self.mesh_device.get_device_ids(),
                    "simulator" if is_simulator(ttnn) else "ttnn",
                    f", fabric {self._fabric.name}" if self._fabric is not None else "")

    def shutdown(self) -> None:
        """Releases the model's traces and closes the device. vLLM calls it from the engine core's teardown, which
        also runs on SIGINT / SIGTERM (vllm_patches/shutdown.py gives it the time to)."""
        # A stop signal received meanwhile takes effect on leaving this block, so everything, the log line too,
        # happens inside it.
        with deferring_stop_signals():
            if self.mesh_device is None:
                return
            from tt_models.backend import get_ttnn

            ttnn, mesh, self.mesh_device = get_ttnn(), self.mesh_device, None
            ids = mesh.get_device_ids()
            try:
                model = self.model_runner.model
                if model is not None and hasattr(model, "release"):
                    model.release()
            finally:
                ttnn.close_mesh_device(mesh)
                if self._fabric is not None:
                    ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)
            logger.info("closed TT mesh device(s) %s", ids)

    def synchronize_device(self) -> None:
        if self.mesh_device is not None:
            from tt_models.backend import get_ttnn

            get_ttnn().synchronize_device(self.mesh_device)

    def check_health(self) -> None:
        if self.mesh_device is None:
            raise RuntimeError("TT device is not open")

    # --- model ---
    @_closes_the_device_if_it_fails
    def load_model(self, *, load_dummy_weights: bool = False) -> None:
        self.model_runner.model = load_tt_model(self.vllm_config, self.mesh_device, self.tt)
        spec = self.model_runner.spec
        model = self.model_runner.model.model
        if spec is not None and model.user_split is not None:
            # A request's verify rows stay on the chip column that runs its slot (SpecDecoder.verify).
            if spec.k + 1 > model.attention_users:
                raise ValueError(f"num_speculative_tokens={spec.k}: on this 2-D mesh each chip column decodes "
                                 f"{model.attention_users} users, and a request's drafts and last token must fit "
                                 "its column's rows")
        if spec is not None and spec.draft is not None:
            draft_config = self.vllm_config.speculative_config.draft_model_config
            spec.draft.model = load_tt_model(self.vllm_config, self.mesh_device, self.tt, draft_config)

    def _draft(self) -> Any:
        """The speculative-decoding draft model's generation class, or None."""
        spec = self.model_runner.spec
        return spec.draft.model if spec is not None and spec.draft is not None else None

    def get_model(self) -> Any:
        return self.model_runner.model

    def get_model_inspection(self) -> str:
        model = self.model_runner.model
        if model is None:
            return "TT model (not loaded)"
        a = model.model.args
        return (f"{type(model).__name__}(family={a.family}, layers={a.n_layers}, dim={a.dim}, heads={a.n_heads}, "
                f"kv_heads={a.n_kv_heads}, head_dim={a.head_dim}, vocab={a.vocab_size}, "
                f"optimizations={self.tt.optimizations}, mesh={tuple(self.mesh_device.shape)}, "
                f"tensor_parallel={model.model.plan.devices}"
                + (f" two-way {plan.grid[0]}x{plan.grid[1]})" if (plan := model.model.plan).two_d else ")"))

    def get_supported_tasks(self) -> tuple[str, ...]:
        return ("generate",)

    # --- KV cache ---
    def _kv_heads(self) -> int:
        """KV heads one chip caches: the model's share under tensor parallel over the mesh (vLLM's own count is for
        vLLM's tensor parallel, which TT does not use). vLLM sizes its pages, and so the block count it derives
        from determine_available_memory, with it."""
        model = self.model_runner.model
        if model is not None and hasattr(model, "kv_cache_heads"):
            return model.kv_cache_heads
        return self.model_config.get_num_kv_heads(self.parallel_config)

    def _layer_windows(self, n_layers: int) -> list[int | None]:
        """Each layer's sliding window as the TT model computes it (Gemma 3: only its sliding layers; a Qwen2.5
        config's sliding_window with use_sliding_window off: none)."""
        model = self.model_runner.model
        if model is not None and hasattr(model, "model"):
            args = model.model.args
            return [args.window(i) for i in range(n_layers)]
        return [getattr(self.model_config.hf_text_config, "sliding_window", None)] * n_layers

    def _hybrid(self) -> bool:
        """vLLM's hybrid KV cache manager is on (the platform supports it; --disable-hybrid-kv-cache-manager turns
        it off): sliding-window layers get their own block tables and keep only their window's blocks."""
        return not self.vllm_config.scheduler_config.disable_hybrid_kv_cache_manager

    def get_kv_cache_spec(self) -> dict[str, KVCacheSpec]:
        """A sliding-window layer declares its window (SlidingWindowSpec), so vLLM's hybrid KV cache keeps only the
        window's blocks for it; global layers keep the whole context (FullAttentionSpec). With the hybrid manager
        off every layer keeps the whole context in one block table (kv_blocks.layer_kv_spec)."""
        mc = self.model_config
        n_layers = mc.get_num_layers(self.parallel_config)
        return {f"model.layers.{i}.self_attn": layer_kv_spec(window, self._hybrid(), self.cache_config.block_size,
                                                             self._kv_heads(), mc.get_head_size(), mc.dtype)
                for i, window in enumerate(self._layer_windows(n_layers))}

    def _kv_groups(self) -> tuple[list[Any], list[int]]:
        """vLLM's KV-cache groups for this model's specs (its own grouping, as the engine will make them) and the
        most blocks one request holds in each (vLLM's own per-spec bound: the whole context for full attention,
        about the window plus the tokens in flight for a sliding-window group)."""
        groups = get_kv_cache_groups(self.vllm_config, self.get_kv_cache_spec())
        held = []
        for g in groups:
            spec = g.kv_cache_spec
            one = getattr(spec, "kv_cache_specs", {}).get(g.layer_names[0], spec)  # a group's spec per layer
            held.append(one.max_memory_usage_bytes(self.vllm_config) // one.page_size_bytes)
        return groups, held

    def kv_cache_windows(self) -> dict[str, list[int | None]]:
        """Each layer's window in layer order, as plain data (what `LLM.collective_rpc` can carry back: the specs
        themselves hold a torch dtype, which vLLM's msgpack does not serialize): "attention", the window its
        attention applies; "spec", the window its KV spec declares (hybrid KV cache: the tokens vLLM keeps, see
        get_kv_cache_spec), and "kind", the spec's type."""
        specs = list(self.get_kv_cache_spec().values())
        return {"attention": self._layer_windows(len(specs)), "spec": [s.sliding_window for s in specs],
                "kind": [type(s).__name__ for s in specs]}

    def kv_cache_layout(self) -> dict[str, Any]:
        """The allocated cache as plain data (for `LLM.collective_rpc`): the block tables vLLM keeps per request
        (KV-cache groups), each layer's group, the distinct K/V tensor pairs (MLA: latent caches) the device holds,
        and the group whose block table a draft model's cache follows (None: no draft, or one group)."""
        runner = self.model_runner
        draft = runner.spec.draft if runner.spec is not None else None
        return {"groups": runner.kv_groups, "layer_groups": list(runner.model.model.kv_groups),
                "tensor_pairs": len({id(layer[0]) for layer in runner.kv_cache[0]}),
                "draft_table_group": None if draft is None else draft.table_group}

    def get_supported_kv_cache_layouts(self) -> list[str]:
        return ["LBHNC"]  # per layer [blocks, heads, block_size, head_dim], as TT's paged ops use it

    @_closes_the_device_if_it_fails
    def determine_available_memory(self) -> int:
        """Bytes (in vLLM's page accounting) of exactly the KV blocks to allocate: what the model asks for, capped by
        the DRAM the device's allocator has left after the weights. vLLM divides this back into blocks. With
        several KV-cache groups (hybrid) the groups draw blocks from one pool and a block spans one layer of each
        group (the largest group's layer count): each group holds its own requests' blocks."""
        mc, sched, cache = self.model_config, self.vllm_config.scheduler_config, self.cache_config
        model = self.model_runner.model
        groups, held = self._kv_groups()
        layers_per_block = max(len(g.layer_names) for g in groups)
        # Data parallel: each replica's cache is planned as one device's for its share of the users, and vLLM's
        # pool holds every replica's blocks (split among them: vllm_patches/replica_blocks.py).
        replicas = self.tt.data_parallel
        seqs = sched.max_num_seqs // replicas
        # A draft model's cache has as many blocks as the target's (the same ids): a block costs both.
        draft = self._draft()
        capacity = (model.kv_cache_capacity(cache.block_size, layers_per_block) if draft is None else
                    model.kv_cache_capacity(cache.block_size, layers_per_block, draft=draft))
        wanted = wanted_blocks(model.get_max_tokens_all_users(mc.model, max_model_len=mc.max_model_len,
                                                              max_num_seqs=seqs),
                               mc.max_model_len, cache.block_size, seqs, held)
        override = cache.num_gpu_blocks_override
        blocks = plan_kv_blocks(wanted, capacity, mc.max_model_len, cache.block_size,
                                None if override is None else override // replicas, held)
        logger.info("TT KV cache: %d blocks of %d tokens (model asks for %d, device DRAM holds %d)%s%s", blocks,
                    cache.block_size, wanted, capacity.blocks,
                    f"; {len(groups)} KV-cache groups of {layers_per_block} layers, one request holding at most "
                    f"{held} blocks in each" if len(groups) > 1 else "",
                    f" on each of {replicas} data-parallel replicas" if replicas > 1 else "")
        page = next(iter(self.get_kv_cache_spec().values())).page_size_bytes
        return blocks * replicas * layers_per_block * page

    @_closes_the_device_if_it_fails
    def initialize_from_config(self, kv_cache_config: Any) -> None:
        mc = self.model_config
        shape = (kv_cache_config.num_blocks, self._kv_heads(), self.cache_config.block_size, mc.get_head_size())
        runner = self.model_runner
        n_layers = mc.get_num_layers(self.parallel_config)
        groups = kv_cache_config.kv_cache_groups
        # Each layer's group (hybrid KV cache: its own block table); None: one table for every layer.
        layer_groups = None
        if len(groups) > 1:
            layer_groups = [0] * n_layers
            for g, group in enumerate(groups):
                for name in group.layer_names:
                    layer_groups[int(name.split(".")[2])] = g
        runner.kv_cache = runner.model.allocate_kv_cache(shape, mc.dtype, n_layers, layer_groups)
        if (draft := self._draft()) is not None:
            a = draft.model.args
            runner.spec.draft.kv_cache = draft.allocate_kv_cache(
                (shape[0], draft.kv_cache_heads, shape[2], a.head_dim), mc.dtype, a.n_layers)
            runner.spec.draft.table_group = self._full_attention_group(groups)
        runner.blocks_per_replica = shape[0] // self.tt.data_parallel
        runner.set_kv_cache_groups(len(groups))
        logger.info("allocated TT KV cache: %d blocks of %d tokens%s", shape[0], shape[2],
                    f" in {len(groups)} groups: {[len(g.layer_names) for g in groups]} layers"
                    if len(groups) > 1 else "")

    @staticmethod
    def _full_attention_group(groups: list[Any]) -> int | None:
        """The KV-cache group whose block table a draft model's cache follows: with one group, that one (None);
        under the hybrid KV cache (sliding-window layers in the target) a full-attention group, whose table keeps
        every block of the sequence. The draft's own sliding-window layers then apply their window in attention
        over that whole table, as the target's do with the hybrid manager off."""
        if len(groups) == 1:
            return None
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        def whole(group: Any) -> bool:
            spec = group.kv_cache_spec
            one = getattr(spec, "kv_cache_specs", {}).get(group.layer_names[0], spec)  # a group's spec per layer
            return isinstance(one, FullAttentionSpec) and one.sliding_window is None

        full = [g for g, group in enumerate(groups) if whole(group)]
        if not full:
            raise ValueError("a draft model with a target whose every layer has a sliding window is not supported on "
                             "TT: the draft's cache follows a full-attention layer group's block table")
        return full[0]

    @_closes_the_device_if_it_fails
    def compile_or_warm_up_model(self) -> CompilationTimes:
        """Every prefill bucket, then the decode traces at vLLM's exact decode shapes, before reporting ready."""
        t0 = time.perf_counter()
        runner = self.model_runner
        if self.tt.enable_model_warmup:
            sampling = [None]
            runner.model.warmup_model_prefill(runner.kv_cache, False, sampling)  # prefill is not traced
            # With on-device sampling a step runs one of four decode traces (device greedy, device sampling,
            # device sampling with penalties / logprobs, or logits for the host when a request needs more): capture
            # all now, so switching never captures while serving.
            decode_sampling: list = [None]
            if self.tt.sample_on_device(prefill=False):
                n = runner.max_num_seqs
                decode_sampling += [TTSamplingParams(temperature=[0.0] * n),
                                    TTSamplingParams(temperature=[1.0] * n, top_k=[MAX_TOP_K] * n, top_p=[1.0] * n),
                                    TTSamplingParams(temperature=[1.0] * n, top_k=[MAX_TOP_K] * n, top_p=[1.0] * n,
                                                     repetition_penalty=[1.1] * n, token_history=[None] * n)]
            runner.model.warmup_model_decode(runner.kv_cache, self.tt.trace_decode, runner.max_num_seqs, runner.width,
                                             sampling_params=decode_sampling)
            if (draft := self._draft()) is not None:
                # The draft prefills what the target does and decodes greedy on the device only.
                draft.warmup_model_prefill(runner.spec.draft.kv_cache, False, [None])
                draft.warmup_model_decode(runner.spec.draft.kv_cache, self.tt.trace_decode, runner.max_num_seqs,
                                          runner.width,
                                          sampling_params=[TTSamplingParams(temperature=[0.0] * runner.max_num_seqs)])
        return CompilationTimes(language_model=time.perf_counter() - t0, encoder=0.0)

    # --- steps ---
    def execute_model(self, scheduler_output: Any) -> Any:
        return self.model_runner.execute_model(scheduler_output)

    def sample_tokens(self, grammar_output: Any = None) -> Any:
        return self.model_runner.sample_tokens(grammar_output)

    def take_draft_token_ids(self) -> Any:
        return self.model_runner.take_draft_token_ids()

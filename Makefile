# Two commands set everything up on a fresh machine with Python >= 3.11 and make:
#   make run    install, then run the main job on the embedded default
#   make test   install, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= out/main

.PHONY: run test bench kernels reports reports-h200 reports-h100 presets index clean help

help:
	@echo "make run     install, then run the main job (writes $(OUT)/)"
	@echo "make test    install, then run the whole test suite"
	@echo "make bench   install, then run the benchmarks and record them"
	@echo "make kernels build the CUDA programs in gpu_kernels/ (needs nvcc)"
	@echo "make reports recalibrate and re-predict the committed H200 and H100 runs (long: see"
	@echo "             README; reports-h200 or reports-h100 for one GPU; JOBS=N predicts with N"
	@echo "             worker processes)"
	@echo "make index   write the runs' records, validation/experiments/README.md and the"
	@echo "             README's validation table from the committed runs and reports"

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: $(STAMP)
	$(BIN)/hostlink run --out $(OUT)

# one worker per core (pytest-xdist); a test file's tests stay on one worker, so its
# module-scoped fixtures are built once
test: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile

bench: $(STAMP)
	@for f in tests/bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

kernels:
	$(MAKE) -C gpu_kernels

# The committed runs of each GPU, calibrated in a chain (launch costs and device
# latency first, each later run's own microbenchmarks on top) and reported; a
# report resumes from its predictions.parquet when interrupted.
# naive BFS at scale 24 is left out: its twin holds ~10^8 requests per source
SCALE24_CASES := micro/,/merged/,/merged_aligned/,/chunked/,/balanced/
# the H200 leases besides uvm_sparse's that measured its dense UVM first touch (uvm_sparse/README.md)
UVM_TOUCH_H200 = $(EXP)/first_run/runs/h200,$(EXP)/gather_session/runs/h200,$(EXP)/uvm_faults/runs/h200,$\
$(EXP)/uvm_faults/runs/h200-repeat,$(EXP)/uvm_host_state/runs/h200,$(EXP)/uvm_session/runs/h200,$\
$(EXP)/uvm_session/runs/h200-repeat,$(EXP)/uvm_session24/runs/h200,$(EXP)/uvm_session24/runs/h200-repeat
# worker processes per report (make reports JOBS=4; 0 = one per CPU): the same numbers;
# memory up to about JOBS working sets beside one graph mapped from its files (scale 24:
# 22.1 GB for one, the H200's scale24 report, before the engine's cost table cut the
# urand22 bench's peak by 31%; the graph's 4.3 GB are page cache). Two urand24 twins
# at once do not fit 23 GiB: beside the H200's scale24 report a second process on its
# merged_aligned cases was killed by the kernel at 12.8 GB anonymous (2026-11-27)
JOBS     ?= 1
CAL       = $(BIN)/hostlink validate calibrate
REPORT    = $(BIN)/hostlink validate report
EXP      := validation/experiments

reports: reports-h200 reports-h100

# The data tree's generated pages (tests/experiments/test_index.py checks them)
index: $(STAMP)
	$(BIN)/hostlink validate index

# The presets of the two validated GPUs are the calibrations their first_run reports
# are made with (run after make reports; tests/model/test_presets.py checks them)
FREEZE = $(BIN)/hostlink config freeze
presets: $(STAMP)
	$(FREEZE) $(EXP)/host_read/runs/h200/calibrated.toml --name h200-pcie5 --base h200-pcie5 \
	  --keep translation.managed_walkers --keep translation.cold_span_ns --keep gpu.sm_l2_request_ns \
	  --keep gpu.shared_write_ns --keep uvm.launches_one_block_first_fault_us \
	  --keep uvm.batch_base_us --keep uvm.block_us \
	  --keep uvm.copy_page_us --keep uvm.move_page_us --keep uvm.first_fault_us \
	  --out sim_configs/system/h200-pcie5.toml \
	  --description "NVIDIA H200 SXM5 141 GB HBM3e (132 SMs, 700 W), PCIe 5.0 x16 to a virtualised Intel Xeon host; host DRAM taken as DDR5-4800 x8 (not measured)" \
	  --header "The lent H200 as calibrated for validation/experiments/first_run/runs/h200's report, its host threads by host_read (make presets:\nvalidation/experiments/host_read/runs/h200/calibrated.toml, managed_walkers from accessedby_reach, cold_span_ns from gather_walks,\nlaunches_one_block_first_fault_us from uvm_launches/runs/h200/one_block, shared_write_ns from flag_writes/runs/h200,\nthe UVM fault-service costs from uvm_sparse/runs/h200/pooled, fitted on every lease that measured first touch).\nKeys without provenance here are their part presets' (which mark their assumptions)."
	$(FREEZE) $(EXP)/host_read/runs/h100/calibrated.toml --name h100-pcie5 --base h100-pcie5 \
	  --keep translation.cold_span_ns --keep gpu.sm_l2_request_ns \
	  --keep gpu.shared_write_ns --keep uvm.launches_one_block_first_fault_us \
	  --out sim_configs/system/h100-pcie5.toml \
	  --description "NVIDIA H100 SXM5 80 GB HBM3 (132 SMs, 700 W), PCIe 5.0 x16 to a virtualised Intel Xeon host; host DRAM taken as DDR5-4800 x8 (not measured)" \
	  --header "The lent H100 as calibrated for validation/experiments/first_run/runs/h100's report, its host threads by host_read (make presets:\nvalidation/experiments/host_read/runs/h100/calibrated.toml, cold_span_ns from the H200's gather_walks,\nlaunches_one_block_first_fault_us from uvm_launches/runs/h100/one_block,\nshared_write_ns from flag_writes/runs/h100).\nKeys without provenance here are their part presets' (which mark their assumptions)."
	$(BIN)/hostlink config seeds --from h200-pcie5 --out sim_configs/system
	$(BIN)/python -m hostlink.model.bands --write validation/experiments

# The H200 chain starts from base_system.toml: h200-pcie5 with the GPU-internal
# part of a host read measured on the H100 (the H200's own tag-window run came
# later and is calibrated and reported beside the chain, as are its uvm_sizes
# and uvm_host_state runs).
# scale24_load_ahead1 ran right after scale24 on the same machine and has no
# microbenchmarks of its own: it is predicted with scale24's calibration.
# hot_lines' random lines in device memory give the read kernel's own time per
# load (calibrate step random_kernel) and its ld.cv reads of a few host lines the
# time a read holds its line (step cv_lines; nothing else is fitted on that run),
# which first_run's calibration carries on; hot_lines (its other host reads held
# out) and
# uvm_alloc (one line in managed buffers of 2 MiB to 2 GiB, nothing fitted on it)
# are predicted with first_run's calibration (the same on the H100).
reports-h200: $(STAMP)
	$(CAL) $(EXP)/launch_latency/runs/h200 --system $(EXP)/launch_latency/base_system.toml --quiet
	$(REPORT) $(EXP)/launch_latency/runs/h200 --system $(EXP)/launch_latency/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/uvm_sparse/runs/h200 --system $(EXP)/launch_latency/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_sparse/runs/h200 --system $(EXP)/uvm_sparse/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/uvm_sizes/runs/h200 --system $(EXP)/uvm_sparse/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_sizes/runs/h200 --system $(EXP)/uvm_sizes/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/hot_lines/runs/h200 --system $(EXP)/uvm_sparse/runs/h200/calibrated.toml --steps random_kernel,cv_lines --quiet
	$(CAL) $(EXP)/first_run/runs/h200 --system $(EXP)/hot_lines/runs/h200/calibrated.toml --quiet
	$(CAL) $(EXP)/tag_window/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/tag_window/runs/h200 --system $(EXP)/tag_window/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/uvm_host_state/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_host_state/runs/h200 --system $(EXP)/uvm_host_state/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/uvm_alloc/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/hot_lines/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	@# the one-off fault cost of back-to-back launches (uvm.launches_first_fault_us)
	@# fitted on first touch split over launches as a traversal's are: uvm_launches (reparsed
	@# from uvm_launches.sh's output) pooled with the four other leases that measured it, each
	@# lease weighing the same (the cost differs from lease to lease), beside the chain's
	@# single-launch cost; first_run is reported with both (its calibration and that one
	@# cost: nothing of first_run is in the pool), as are the scale-14 UVM traversals of the
	@# two traversal14 runs and uvm_session/runs/h200-repeat's (a lease outside the pool)
	$(CAL) $(EXP)/uvm_launches/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --steps uvm_first_launch \
	  --pool $(EXP)/uvm_session/runs/h200,$(EXP)/uvm_faults/runs/h200,$(EXP)/uvm_faults/runs/h200-repeat,$(EXP)/uvm_session24/runs/h200 --quiet
	@# beside the chain (the presets keep it): the same one-off cost of buffers within one
	@# VA block, fitted on uvm_launches' 2 MiB buffers alone (uvm_launches/README.md)
	$(CAL) $(EXP)/uvm_launches/runs/h200 --system $(EXP)/uvm_launches/runs/h200/calibrated.toml \
	  --steps uvm_first_launch_one_block --out $(EXP)/uvm_launches/runs/h200/one_block/calibrated.toml --quiet
	@# the host loop between a traversal's launches (a flag's reset and read-back, a
	@# synchronisation): each stream item's cost fitted on host_loop's loops of parts, the
	@# two leases pooled (host_loop/runs/h200-repeat's own fit beside), the programs' own loops held
	@# out; first_run's time_ms takes it
	$(CAL) $(EXP)/host_loop/runs/h200-repeat --system $(EXP)/uvm_launches/runs/h200/calibrated.toml --steps host_loop --quiet
	$(CAL) $(EXP)/host_loop/runs/h200 --system $(EXP)/uvm_launches/runs/h200/calibrated.toml --steps host_loop \
	  --pool $(EXP)/host_loop/runs/h200-repeat --quiet
	for r in host_loop/runs/h200 host_loop/runs/h200-repeat; do \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/host_loop/runs/h200/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	@# what an atomic that returns costs beyond a load (SSSP's and CC's atomicMin): fitted
	@# on atomic_chase's chases of 1 and 32 lanes over 64 KiB, with the chain's device
	@# latencies; its other chases held out, and atomic_chase/runs/h200-repeat (the next lease) whole;
	@# first_run's traversals take it, with atomic_warps' SM turn
	$(CAL) $(EXP)/atomic_chase/runs/h200 --system $(EXP)/host_loop/runs/h200/calibrated.toml --steps atomic --quiet
	for r in atomic_chase/runs/h200 atomic_chase/runs/h200-repeat; do \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/atomic_chase/runs/h200/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	@# the SM's turn per atomic line (gpu.atomic_sm_ns): atomic_warps' 16 warps of one SM,
	@# 32 lines each; its other warp counts held out
	$(CAL) $(EXP)/atomic_warps/runs/h200 --system $(EXP)/atomic_chase/runs/h200/calibrated.toml --steps atomic_sm --quiet
	$(REPORT) $(EXP)/atomic_warps/runs/h200 --system $(EXP)/atomic_warps/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/first_run/runs/h200 --system $(EXP)/atomic_warps/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	@# beside the chain (the H200 preset keeps them): UVM first touch's fault-service
	@# costs fitted on every lease that measured it, each lease weighing the same, from
	@# first_run's calibration (uvm_sparse/README.md); the chain keeps uvm_sparse's own
	$(CAL) $(EXP)/uvm_sparse/runs/h200 --system $(EXP)/atomic_warps/runs/h200/calibrated.toml --steps uvm_batches \
	  --pool $(UVM_TOUCH_H200) --out $(EXP)/uvm_sparse/runs/h200/pooled/calibrated.toml --quiet
	@# host threads reading random rows (the CPU gather's half, which no GPU times):
	@# fitted on host_read's own sums and copies; the presets take it, and the gather
	@# runs' CPU gather plus copy is held out (host_read/README.md)
	$(CAL) $(EXP)/host_read/runs/h200 --system $(EXP)/atomic_warps/runs/h200/calibrated.toml --steps host_read --quiet
	@# the gather's UVM first touch predicted with the UVM costs of its own session's first
	@# touch (gather_session/README.md)
	$(CAL) $(EXP)/gather_session/runs/h200 --system $(EXP)/host_read/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/gather_session/runs/h200 --system $(EXP)/gather_session/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	for r in traversal14_la1/runs/h200 traversal14_la1/runs/h200-again; do \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/uvm_launches/runs/h200/calibrated.toml --only /uvm/,/uvm_readmostly/ --jobs $(JOBS) --quiet || exit 1; \
	done
	$(REPORT) $(EXP)/uvm_session/runs/h200-repeat --system $(EXP)/uvm_launches/runs/h200/calibrated.toml --only /uvm/,/uvm_readmostly/ \
	  --out $(EXP)/uvm_session/runs/h200-repeat/chain_pooled --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/scale24/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/scale24/runs/h200 --system $(EXP)/scale24/runs/h200/calibrated.toml --max-sources 1 --only $(SCALE24_CASES) --jobs $(JOBS) --quiet
	@# the balanced variant from host memory on its own (its first twin, made before scale24's own report had it)
	$(REPORT) $(EXP)/scale24/runs/h200 --system $(EXP)/scale24/runs/h200/calibrated.toml --max-sources 1 --only /balanced/zerocopy/ \
	  --out $(EXP)/scale24/runs/h200/balanced_zerocopy --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/scale24_load_ahead1/runs/h200 --system $(EXP)/scale24/runs/h200/calibrated.toml --max-sources 1 --only $(SCALE24_CASES) --jobs $(JOBS) --quiet
	@# a few warps' loads with ld.cv and the default operator (its own tag window and chase)
	$(CAL) $(EXP)/cv_overlap/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/cv_overlap/runs/h200 --system $(EXP)/cv_overlap/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	@# UVM first touch and scale-24 UVM BFS in one session: the UVM costs fitted on the
	@# session's own first touch, the BFS held out (uvm_session24/README.md)
	$(CAL) $(EXP)/uvm_session24/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_session24/runs/h200 --system $(EXP)/uvm_session24/runs/h200/calibrated.toml --max-sources 1 --jobs $(JOBS) --quiet
	@# the same on a later lease, with its own first touch and with the earlier lease's
	@# costs (validation/experiments/uvm_session24/README.md)
	$(CAL) $(EXP)/uvm_session24/runs/h200-repeat --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_session24/runs/h200-repeat --system $(EXP)/uvm_session24/runs/h200-repeat/calibrated.toml --max-sources 1 --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/uvm_session24/runs/h200-repeat --system $(EXP)/uvm_session24/runs/h200/calibrated.toml --only bfs/ --max-sources 1 \
	  --out $(EXP)/uvm_session24/runs/h200-repeat/earlier_lease_costs --jobs $(JOBS) --quiet
	@# the scale-14 and kron21 UVM traversals after first touch in one session (as the H100's
	@# uvm_session), and again on a later lease
	for r in uvm_session/runs/h200 uvm_session/runs/h200-repeat; do \
	  $(CAL) $(EXP)/$$r --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/$$r/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	@# uvm_session's manifest with first touch at one line per 4 KiB to 2 MiB, twice on one
	@# lease (uvm_faults/README.md), and that lease's uvm_ids with the first run's costs
	for r in uvm_faults/runs/h200 uvm_faults/runs/h200-repeat; do \
	  $(CAL) $(EXP)/$$r --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/$$r/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	$(REPORT) $(EXP)/uvm_ids/runs/h200 --system $(EXP)/uvm_faults/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	@# the link's microbenchmarks with 32 B reads among them in three rounds (its own tag window)
	$(CAL) $(EXP)/micro_tags/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/micro_tags/runs/h200 --system $(EXP)/micro_tags/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	@# managed memory left on the host beside pinned and registered memory, as on the H100:
	@# accessedby_reach fits its page walks in flight, accessedby_session holds them out
	$(CAL) $(EXP)/accessedby_reach/runs/h200 --system $(EXP)/micro_tags/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/accessedby_reach/runs/h200 --system $(EXP)/accessedby_reach/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/accessedby_session/runs/h200 --system $(EXP)/accessedby_reach/runs/h200/calibrated.toml --skip-steps managed_translation --quiet
	$(REPORT) $(EXP)/accessedby_session/runs/h200 --system $(EXP)/accessedby_session/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	@# coalesced reads at every 16 B offset from the line beside the link's groups: the rate
	@# the host serves 64 B lines at (calibrate step host_serve; cpl_offsets/README.md)
	$(CAL) $(EXP)/cpl_offsets/runs/h200 --system $(EXP)/first_run/runs/h200/calibrated.toml --quiet
	$(REPORT) $(EXP)/cpl_offsets/runs/h200 --system $(EXP)/cpl_offsets/runs/h200/calibrated.toml --jobs $(JOBS) --quiet
	@# device memory streamed by the SMs, nothing fitted on it (device_stream/README.md)
	$(REPORT) $(EXP)/device_stream/runs/h200 --system $(EXP)/atomic_warps/runs/h200/calibrated.toml --jobs $(JOBS) --quiet

# The H100 chain splits the host read's latency with the tag-window run, which
# rests on first_run's loaded round trip: first_run is calibrated once before it
# and once after it (the second time keeping the split), and reported once the
# one-off fault cost of launches back to back is pooled (uvm_launches). uvm_sizes
# (first touch from 256 KiB up) is calibrated and reported beside the chain, not
# in it: the UVM costs it fits leave the traversals further off (README).
reports-h100: $(STAMP)
	$(CAL) $(EXP)/launch_latency/runs/h100 --system h100-pcie5-datasheet --quiet
	$(REPORT) $(EXP)/launch_latency/runs/h100 --system $(EXP)/launch_latency/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/uvm_sparse/runs/h100 --system $(EXP)/launch_latency/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_sparse/runs/h100 --system $(EXP)/uvm_sparse/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/uvm_sizes/runs/h100 --system $(EXP)/uvm_sparse/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_sizes/runs/h100 --system $(EXP)/uvm_sizes/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/hot_lines/runs/h100 --system $(EXP)/uvm_sparse/runs/h100/calibrated.toml --steps random_kernel,cv_lines --quiet
	$(CAL) $(EXP)/first_run/runs/h100 --system $(EXP)/hot_lines/runs/h100/calibrated.toml --quiet
	$(CAL) $(EXP)/tag_window/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/tag_window/runs/h100 --system $(EXP)/tag_window/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/first_run/runs/h100 --system $(EXP)/tag_window/runs/h100/calibrated.toml --quiet
	$(CAL) $(EXP)/uvm_host_state/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_host_state/runs/h100 --system $(EXP)/uvm_host_state/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/uvm_alloc/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/hot_lines/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/scale24/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/scale24/runs/h100 --system $(EXP)/scale24/runs/h100/calibrated.toml --max-sources 1 --only $(SCALE24_CASES) --jobs $(JOBS) --quiet
	@# UVM first touch and UVM traversals measured in one session: the UVM costs fitted on
	@# the session's own first touch (uvm_session also on first touch split over launches,
	@# calibrate step uvm_first_launch, and _repeat and _c on later leases; _a and _b, two
	@# earlier leases, without it)
	for r in uvm_session/runs/h100 uvm_session/runs/h100-repeat uvm_session/runs/h100-a uvm_session/runs/h100-b uvm_session/runs/h100-c; do \
	  $(CAL) $(EXP)/$$r --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/$$r/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	@# UVM BFS with 4 and 8 B ids on kron20 and kron21 (no first touch of its own: uvm_session's
	@# UVM costs; uvm_ids/README.md)
	$(REPORT) $(EXP)/uvm_ids/runs/h100 --system $(EXP)/uvm_session/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	@# the same at scale 24: first touch, then kron24 and urand24 UVM BFS (uvm_session24/README.md)
	$(CAL) $(EXP)/uvm_session24/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_session24/runs/h100 --system $(EXP)/uvm_session24/runs/h100/calibrated.toml --max-sources 1 --jobs $(JOBS) --quiet
	@# uvm_session's traversals after first touch at one line per 4 KiB to 2 MiB (uvm_faults/README.md)
	$(CAL) $(EXP)/uvm_faults/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/uvm_faults/runs/h100 --system $(EXP)/uvm_faults/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	@# first_run's link calibration groups and zero-copy read patterns in one session, each
	@# run fitted on its own microbenchmarks (micro_session and _repeat: repetitions back to
	@# back; micro_rounds: in three rounds), and the hot_lines run of the same lease predicted
	@# with that calibration; micro_rounds_b and _c on top of tag_window_b and _c, their
	@# leases' 32 B reads
	for r in micro_session/runs/h100 micro_session/runs/h100-repeat micro_rounds/runs/h100; do \
	  $(CAL) $(EXP)/$$r --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/$$r/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	$(REPORT) $(EXP)/hot_lines/runs/h100-session --system $(EXP)/micro_session/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/hot_lines/runs/h100-session-repeat --system $(EXP)/micro_session/runs/h100-repeat/calibrated.toml --jobs $(JOBS) --quiet
	$(REPORT) $(EXP)/hot_lines/runs/h100-rounds --system $(EXP)/micro_rounds/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	for l in b c; do \
	  $(CAL) $(EXP)/tag_window/runs/h100-$$l --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/tag_window/runs/h100-$$l --system $(EXP)/tag_window/runs/h100-$$l/calibrated.toml --jobs $(JOBS) --quiet && \
	  $(CAL) $(EXP)/micro_rounds/runs/h100-$$l --system $(EXP)/tag_window/runs/h100-$$l/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/micro_rounds/runs/h100-$$l --system $(EXP)/micro_rounds/runs/h100-$$l/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	@# micro_tags: the same with tag_window's 32 B reads among the rounds, so its own
	@# calibration fits the tag window (twice on one lease, then on three others)
	for r in micro_tags/runs/h100 micro_tags/runs/h100-repeat micro_tags/runs/h100-b micro_tags/runs/h100-c micro_tags/runs/h100-d; do \
	  $(CAL) $(EXP)/$$r --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/$$r/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	@# a few warps' rounds of 1 to 32 requests (its own tag window and chase)
	$(CAL) $(EXP)/warp_rounds/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --quiet
	$(REPORT) $(EXP)/warp_rounds/runs/h100 --system $(EXP)/warp_rounds/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	@# UVM first touch of 512 MiB to 4 GiB, nothing fitted on it: the chain's UVM costs
	$(REPORT) $(EXP)/uvm_large/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	@# the one-off fault cost of back-to-back launches on first touch split over launches:
	@# uvm_launches pooled with the five other leases that measured it, each weighing the same,
	@# beside the chain's single-launch cost; first_run is reported with both (its calibration
	@# and that one cost: nothing of first_run is in the pool; uvm_launches/README.md)
	$(CAL) $(EXP)/uvm_launches/runs/h100 --system $(EXP)/first_run/runs/h100/calibrated.toml --steps uvm_first_launch \
	  --pool $(EXP)/uvm_session/runs/h100,$(EXP)/uvm_session/runs/h100-repeat,$(EXP)/uvm_session/runs/h100-c,$(EXP)/uvm_faults/runs/h100,$(EXP)/uvm_session24/runs/h100 --quiet
	@# beside the chain (the presets keep it): the same one-off cost of buffers within one
	@# VA block, fitted on uvm_launches' 2 MiB buffers alone (uvm_launches/README.md)
	$(CAL) $(EXP)/uvm_launches/runs/h100 --system $(EXP)/uvm_launches/runs/h100/calibrated.toml \
	  --steps uvm_first_launch_one_block --out $(EXP)/uvm_launches/runs/h100/one_block/calibrated.toml --quiet
	@# (no H100 host-loop run: its traversals' time_ms take the schema's host-loop costs,
	@# the H200's)
	$(REPORT) $(EXP)/first_run/runs/h100 --system $(EXP)/uvm_launches/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	@# host threads reading random rows, as on the H200
	$(CAL) $(EXP)/host_read/runs/h100 --system $(EXP)/uvm_launches/runs/h100/calibrated.toml --steps host_read --quiet
	@# the gather's UVM first touch predicted with the UVM costs of its own session's first
	@# touch, on two leases (gather_session/README.md)
	for r in gather_session/runs/h100 gather_session/runs/h100-b; do \
	  $(CAL) $(EXP)/$$r --system $(EXP)/host_read/runs/h100/calibrated.toml --quiet && \
	  $(REPORT) $(EXP)/$$r --system $(EXP)/$$r/calibrated.toml --jobs $(JOBS) --quiet || exit 1; \
	done
	@# managed memory left on the host (SetAccessedBy) beside pinned and registered memory:
	@# accessedby_reach fits the managed memory's page walks in flight (its link from
	@# micro_tags_d's lease), accessedby_session fits its own link and holds its managed
	@# points out (every step but managed_translation)
	$(CAL) $(EXP)/accessedby_reach/runs/h100 --system $(EXP)/micro_tags/runs/h100-d/calibrated.toml --quiet
	$(REPORT) $(EXP)/accessedby_reach/runs/h100 --system $(EXP)/accessedby_reach/runs/h100/calibrated.toml --jobs $(JOBS) --quiet
	$(CAL) $(EXP)/accessedby_session/runs/h100 --system $(EXP)/accessedby_reach/runs/h100/calibrated.toml --skip-steps managed_translation --quiet
	$(REPORT) $(EXP)/accessedby_session/runs/h100 --system $(EXP)/accessedby_session/runs/h100/calibrated.toml --jobs $(JOBS) --quiet

clean:
	rm -rf $(VENV) out .pytest_cache

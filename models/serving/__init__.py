"""Serving the pilot model on a Jetson or a GPU box: serving profiles (models/serving/profiles/*.yaml),
the engine command lines they render to (`vllm serve`, `trtllm-serve`), the launcher that starts an
engine, waits for it and warms it up (`dronecats serve-model`), and the latency benchmark
(`dronecats bench-model`). Nothing here imports an engine: engines run as subprocesses.
"""

"""Export episode logs to the viewers robotics reviews flights in: MCAP for Foxglove, .rrd for Rerun.

timeline builds one typed, viewer-neutral timeline from an episode's logs (docs/logs.md); mcap_writer
and rerun_writer write it, each with its viewer's conventions (common.viewer_frames: NED under a Z-up world);
batch picks a run's episodes and names their files (`dronecats episodes export`, docs/review.md).
The writers need the `review` extra (pip install "dronecats[review]"); the timeline does not.
"""

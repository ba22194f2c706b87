"""Autograder for the sequence-models chapter (masks, positional encoding, attention,
recurrent cells, masked loss).

Pipeline, one sub-package per step:

    load/        read a submission (.py, .ipynb or a folder) into namespaces
    sandbox/     run it in a child process with time limits
    exercises/   one folder per exercise: its properties, probes, mistakes, notebook source, solution
    properties/  the hidden properties' harness and strategies (hypothesis); each exercise's are in exercises/
    grading.py   score the results against course.yml
    report/      render the report (text, JSON)
    service/     the grading web service (`seqgrader serve`): uploads, a queue, warm grading
                 processes, the reports and the class's view over HTTP

For the instructor, beside the pipeline:

    similarity/  the class similarity report: functions compared on their canonical trees, and
                 the wrong outputs grading recorded (never shown to a student)
"""

__version__ = "0.1.0"

EXERCISES = ("masks", "positional_encoding", "attention", "recurrent", "masked_loss")

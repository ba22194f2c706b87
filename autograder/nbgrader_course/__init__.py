"""nbgrader integration: build a ready nbgrader course, grade inside autograde, fill the gradebook.

    build.py         `python -m autograder nbgrader-course DIR`: nbgrader_config.py, course.yml and
                     source/<assignment>/<exercise>.ipynb with the solutions in solution regions and
                     one locked hidden-tests cell per function
    cell.py          what a hidden-tests cell calls in a Jupyter kernel (students, `nbgrader validate`)
    preprocessor.py  `SandboxGrade`: replaces nbgrader's Execute in `nbgrader autograde`, so student
                     code runs only in our sandbox, never in nbgrader's kernel
    gradebook.py     write grade-batch's reports into nbgrader's gradebook (formgrader, export)

Facts about nbgrader 0.9.6 this package works around (measured; see docs/instructors.md, "nbgrader"):
a graded cell's last expression value is partial credit in points and a value above the cell's
points fails the submission; any stderr output in a graded cell scores it 0; a deleted test cell
is restored only with OverwriteCells.add_missing_cells; a corrupt notebook shows as a plain 0.
"""

HIDDEN_MARKER = "# autograder: hidden tests"  # first line of every hidden-tests cell
VISIBLE_MARKER = "# autograder: visible checks"  # first line of every visible-checks cell

"""``supervised``: a bag-of-words model trained on the other clips' gold answers.

It reads exactly what a language model is shown (the rendered user prompt: transcript rows, the
question, the candidates) through TF-IDF word 1-2 grams, and learns a logistic regression per fold of
a clip-grouped k-fold. It is the answer to "how much of the score is surface wording?": a language
model that does not beat it has not shown relational understanding.

STP learns *roles* (the group label, the client who spoke last, another client) rather than names,
which differ from clip to clip. ER predicts the intensity class and copies the description of the
most similar training instance; VP copies the most similar training instance's viewpoint texts and
hands them to this client's other participants in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rescue_bench.baselines.common import (
    LABEL_TASKS,
    Guess,
    Method,
    answers_emotion,
    class_order,
    fallback_guess,
    gold_class,
    to_labels,
)
from rescue_bench.tasks.instance import Instance


def _class_probabilities(X_train: Any, y: list[str], X_test: Any) -> tuple[list[str], np.ndarray]:
    """Classes and their predicted probabilities per test row (a single class gets probability 1)."""
    classes = sorted(set(y), key=str)
    if len(classes) == 1:
        return classes, np.ones((X_test.shape[0], 1))
    model = _fit(X_train, y)
    return list(model.classes_), model.predict_proba(X_test)


def _fit(X: Any, y: list[Any]) -> Any:
    """Logistic regression on one BLAS thread: multi-threaded BLAS makes these small L-BFGS problems
    an order of magnitude slower (thread start-up per step) and adds nothing."""
    # scikit-learn is imported when a baseline is computed, not with the package (see common.clip_splits)
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return LogisticRegression(max_iter=1000).fit(X, y)


def supervised_method(texts: Mapping[str, str]) -> Method:
    """The supervised baseline over ``texts`` (instance id -> rendered user prompt)."""

    def method(pool: list[Instance], tests: list[Instance], seed: int) -> dict[str, Guess]:
        if not pool:
            return {t.id: fallback_guess(t) for t in tests}
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
        X = vectorizer.fit_transform([texts[i.id] for i in pool])
        Xt = vectorizer.transform([texts[t.id] for t in tests])
        task = tests[0].task
        out: dict[str, Guess] = {}
        if task in LABEL_TASKS:
            classes, proba = _class_probabilities(X, [gold_class(i, True) for i in pool], Xt)
            for t, p in zip(tests, proba):
                pos = {c: j for j, c in enumerate(class_order(t, True))}
                order = sorted(range(len(classes)), key=lambda j: (-p[j], pos.get(classes[j], len(pos))))
                out[t.id] = to_labels(t, [classes[j] for j in order], True)
            return out
        # TF-IDF rows are L2-normalised, so the dot product is the cosine similarity.
        nearest = np.asarray((Xt @ X.T).toarray().argmax(axis=1)).ravel()
        if answers_emotion(task):
            intensities = [int(i.gold["intensity"]) for i in pool]
            if len(set(intensities)) < 2:
                predicted = [int(round(float(np.median(intensities))))] * len(tests)
            else:
                model = _fit(X, intensities)
                predicted = [int(v) for v in model.predict(Xt)]
            for t, j, k in zip(tests, nearest, predicted):
                out[t.id] = (pool[j].gold["emotion"], k)
        else:
            for t, j in zip(tests, nearest):
                out[t.id] = [v["viewpoint"] for v in pool[j].gold]
        return out

    return method

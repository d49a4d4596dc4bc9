// sevro view: filters, deep links and trial details rendered on demand. No inline handlers: the
// page's CSP allows only this script (by its hash). Trial details arrive as JSON data blocks
// (one per case) and become DOM here only when a trial is opened, through textContent only:
// nothing here ever turns page data into markup.
(function () {
  "use strict";
  var selects = {
    state: document.getElementById("filter-state"),
    execution: document.getElementById("filter-execution"),
    grading: document.getElementById("filter-grading"),
    kase: document.getElementById("filter-case"),
    arm: document.getElementById("filter-arm"),
    check: document.getElementById("filter-check"),
    checkStatus: document.getElementById("filter-check-status"),
  };
  var count = document.getElementById("filter-count");
  var trials = Array.prototype.slice.call(document.querySelectorAll("details.trial"));
  var blocks = {};

  function value(select) {
    return select ? select.value : "";
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = String(text);
    }
    return node;
  }

  function add(parent, tag, className, text) {
    return parent.appendChild(el(tag, className, text));
  }

  function shown(value, fallback) {
    return value === null || value === undefined ? fallback : value;
  }

  function trialData(block, anchor) {
    if (!Object.prototype.hasOwnProperty.call(blocks, block)) {
      var source = document.getElementById(block);
      blocks[block] = source && source.type === "application/json" ?
        JSON.parse(source.textContent) : {};
    }
    var found = blocks[block];
    return Object.prototype.hasOwnProperty.call(found, anchor) ? found[anchor] : null;
  }

  function row(parent, cells, header) {
    var tr = add(parent, "tr");
    cells.forEach(function (cell) {
      add(tr, header ? "th" : "td", null, cell);
    });
    return tr;
  }

  function states(body, t) {
    var p = add(body, "p", "states");
    [["execution", t.execution], ["grading", t.grading], ["task", t.task]].forEach(function (s, i) {
      if (i) {
        p.appendChild(document.createTextNode(" "));
      }
      add(p, "span", "state s-" + s[1], s[0] + " " + s[1]);
    });
    if (t.reason) {
      var why = add(body, "p", "reason", "why: ");
      add(why, "code", null, t.reason);
    }
  }

  function checks(body, t) {
    add(body, "h4", null, "Checks");
    if (!t.checks.length) {
      add(body, "p", "none", "no check outcomes");
      return;
    }
    var table = add(body, "table", "checks");
    row(add(table, "thead"), ["check", "grader", "outcome", "detail"], true);
    var tbody = add(table, "tbody");
    t.checks.forEach(function (c) {
      var tr = add(tbody, "tr", c.partOf ? "part" : "check");
      tr.setAttribute("data-check", c.id);
      tr.setAttribute("data-check-status", c.status);
      var name = add(tr, "td");
      if (c.partOf) {
        add(name, "span", "part-of", "part of " + c.partOf + ":");
        name.appendChild(document.createTextNode(" "));
      }
      name.appendChild(document.createTextNode(c.id));
      add(tr, "td", null, c.grader);
      add(tr, "td", "s-" + c.status, c.status);
      add(add(tr, "td"), "pre", null, c.detail);
    });
  }

  function messages(body, t) {
    add(body, "h4", null, "Final message" + (t.messages.length > 1 ? "s per turn" : ""));
    if (!t.messages.length) {
      add(body, "p", "none", "no final message");
    }
    t.messages.forEach(function (m) {
      var div = add(body, "div", "message");
      add(div, "span", "turn", "turn " + m.turn);
      add(div, "pre", "final-message", m.text);
      if (m.cut) {
        add(div, "p", "cut", "(cut)");
      }
    });
  }

  function actions(body, t) {
    add(body, "h4", null, "Commands and tool calls");
    if (!t.actions.length) {
      add(body, "p", "none", "none recorded");
    } else {
      var ol = add(body, "ol", "actions");
      t.actions.forEach(function (a) {
        var li = add(ol, "li");
        add(li, "span", "kind", a.kind);
        add(li, "span", "turn", " turn " + a.turn + " #" + a.ordinal + " ");
        add(li, "span", "status", a.status);
        add(li, "pre", null, a.text);
      });
    }
  }

  function changes(body, t) {
    add(body, "h4", null, "Files changed");
    if (!t.changes.length) {
      add(body, "p", "none", "none recorded");
    } else {
      var ul = add(body, "ul", "changes");
      t.changes.forEach(function (c) {
        var li = add(ul, "li");
        add(li, "span", "change", c.change);
        li.appendChild(document.createTextNode(" "));
        add(li, "code", "file-name", c.path);
      });
    }
    if (t.diff) {
      var pre = add(body, "pre", "diff");
      pre.setAttribute("data-artifact", t.diff.id);
      t.diff.lines.forEach(function (line) {
        add(pre, "span", "d-" + line[0], line[1] || " ");
      });
      if (t.diff.cut) {
        add(body, "p", "cut", "diff cut at the viewer's bound");
      }
    }
  }

  function skills(body, t) {
    add(body, "h4", null, "Skills");
    if (!t.skillsKnown) {
      add(body, "p", "none", "no skill activation evidence");
      return;
    }
    add(body, "p", "skills", "offered: " + (t.skillsOffered.join(", ") || "none") +
      "; read: " + (t.skillsRead.join(", ") || "none"));
    if (t.skillReads.length) {
      add(body, "p", "skill-reads", "reads by turn: " + t.skillReads.join("; "));
    }
  }

  function usage(body, t) {
    add(body, "h4", null, "Usage and durations");
    var table = add(body, "table", "usage");
    row(table, ["input tokens", "output tokens", "cost (USD)", "usage complete", "fixture ms",
      "candidate ms", "grading ms", "total ms"], true);
    var u = t.usage;
    var cells = [shown(u.inputTokens, "unknown"), shown(u.outputTokens, "unknown"),
      shown(u.costUsd, "unknown"), u.complete ? "yes" : "no"];
    ["fixtureMs", "candidateMs", "gradingMs", "totalMs"].forEach(function (k) {
      var ms = t.durations[k];
      cells.push(typeof ms === "number" ? Math.round(ms) : "unknown");
    });
    row(table, cells, false);
  }

  function reviews(body, t) {
    if (t.judges.length) {
      add(body, "h4", null, "Judges");
      var table = add(body, "table", "judges");
      row(table, ["#", "role", "purpose", "complete", "error", "reply (verdict and reasons)"], true);
      t.judges.forEach(function (j) {
        var tr = row(table, [j.number, j.role, j.purpose, j.complete ? "yes" : "no",
          j.error || ""], false);
        var cell = add(tr, "td");
        if (j.reply !== null && j.reply !== undefined) {
          add(cell, "pre", "judge-reply", j.reply);
        }
      });
    }
    if (t.advisory) {
      add(body, "h4", null, "Advisory review (" + t.advisory.status + ")");
      add(body, "pre", null, t.advisory.summary + t.advisory.reason);
      var ul = add(body, "ul");
      t.advisory.findings.forEach(function (f) {
        add(ul, "li", null, f.severity + " " + f.file + ": " + f.title + " — " + f.detail);
      });
    }
    add(body, "h4", null, "Evidence");
    var paths = add(body, "ul", "paths");
    t.paths.forEach(function (p) {
      add(add(paths, "li"), "code", null, p);
    });
  }

  function render(body) {
    if (!body.classList.contains("lazy")) {
      return;
    }
    var t = trialData(body.getAttribute("data-block"), body.getAttribute("data-anchor"));
    body.classList.remove("lazy");
    body.textContent = "";
    if (!t) {
      add(body, "p", "none", "trial details missing from the page");
      return;
    }
    [states, checks, messages, actions, changes, skills, usage, reviews].forEach(function (part) {
      part(body, t);
    });
  }

  function renderInside(details) {
    var bodies = details.querySelectorAll(".trial-body.lazy");
    for (var i = 0; i < bodies.length; i += 1) {
      render(bodies[i]);
    }
  }

  function checkMatches(trial, check, status) {
    if (!check && !status) {
      return true;
    }
    var outcomes = JSON.parse(trial.getAttribute("data-checks") || "[]");
    for (var i = 0; i < outcomes.length; i += 1) {
      if ((!check || outcomes[i][0] === check) && (!status || outcomes[i][1] === status)) {
        return true;
      }
    }
    return false;
  }

  function applyFilters() {
    var wanted = {
      "data-state": value(selects.state),
      "data-execution": value(selects.execution),
      "data-grading": value(selects.grading),
      "data-case": value(selects.kase),
      "data-arm": value(selects.arm),
    };
    var names = Object.keys(wanted).filter(function (name) {
      return wanted[name];
    });
    var check = value(selects.check);
    var status = value(selects.checkStatus);
    var visibleCount = 0;
    trials.forEach(function (trial) {
      var visible = names.every(function (name) {
        return trial.getAttribute(name) === wanted[name];
      }) && checkMatches(trial, check, status);
      trial.hidden = !visible;
      if (visible) {
        visibleCount += 1;
      }
    });
    if (count) {
      count.textContent = visibleCount + " of " + trials.length + " trials shown";
    }
  }

  function clearFilters() {
    Object.keys(selects).forEach(function (key) {
      if (selects[key]) {
        selects[key].value = "";
      }
    });
    applyFilters();
  }

  function openFromHash() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!id) {
      return;
    }
    var target = document.getElementById(id);
    if (!target || target.tagName !== "DETAILS") {
      return;
    }
    if (target.hidden) {
      clearFilters();
    }
    renderInside(target);
    target.open = true;
    target.classList.add("linked");
    target.scrollIntoView();
  }

  Object.keys(selects).forEach(function (key) {
    if (selects[key]) {
      selects[key].addEventListener("change", applyFilters);
    }
  });
  // "toggle" does not bubble; capturing it on the document sees every details element open.
  document.addEventListener("toggle", function (event) {
    if (event.target.tagName === "DETAILS" && event.target.open) {
      renderInside(event.target);
    }
  }, true);
  window.addEventListener("hashchange", openFromHash);
  applyFilters();
  openFromHash();
})();

// sevro view: filters, deep links and trials drawn on demand. No inline handlers: the page's CSP
// allows only this script (by its hash). Each run carries an index of its trials' rows (a JSON
// data block) and, per case, its trials' details packed as gzip'd base64 JSON. A case's rows
// become DOM when the case is opened, a trial's details when the trial is opened, through
// textContent only: nothing here ever turns page data into markup.
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
  var groups = [];
  var groupOf = {};
  var blocks = {};
  var has = Function.prototype.call.bind(Object.prototype.hasOwnProperty);

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

  function inflate(text) {
    if (typeof DecompressionStream !== "function") {
      return Promise.reject(new Error("this browser cannot unpack them (no DecompressionStream)"));
    }
    var binary = atob(text.trim());
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i += 1) {
      bytes[i] = binary.charCodeAt(i);
    }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  function trialData(block) {
    if (!has(blocks, block)) {
      var source = document.getElementById(block);
      blocks[block] = source && source.type === "application/gzip+base64" ?
        inflate(source.textContent).then(JSON.parse) : Promise.resolve({});
    }
    return blocks[block];
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
    if (t.nativeTranscripts) {
      add(body, "p", "native-transcripts", "Native transcripts: " + t.nativeTranscripts);
    }
    var paths = add(body, "ul", "paths");
    t.paths.forEach(function (p) {
      add(add(paths, "li"), "code", null, p);
    });
  }

  function render(body) {
    if (!body.classList.contains("lazy")) {
      return;
    }
    var anchor = body.getAttribute("data-anchor");
    body.classList.remove("lazy");
    trialData(body.getAttribute("data-block")).then(function (found) {
      var t = has(found, anchor) ? found[anchor] : null;
      body.textContent = "";
      if (!t) {
        add(body, "p", "none", "trial details missing from the page");
        return;
      }
      [states, checks, messages, actions, changes, skills, usage, reviews].forEach(function (part) {
        part(body, t);
      });
    }, function (error) {
      body.textContent = "";
      add(body, "p", "none", "trial details could not be unpacked: " + error.message);
    });
  }

  function renderInside(details) {
    var bodies = details.querySelectorAll(".trial-body.lazy");
    for (var i = 0; i < bodies.length; i += 1) {
      render(bodies[i]);
    }
  }

  // A row of the index: [anchor, trial number, task, execution, grading, [[check, outcome]...]].
  function checkMatches(outcomes, check, status) {
    if (!check && !status) {
      return true;
    }
    for (var i = 0; i < outcomes.length; i += 1) {
      if ((!check || outcomes[i][0] === check) && (!status || outcomes[i][1] === status)) {
        return true;
      }
    }
    return false;
  }

  function wantedNow() {
    return {
      task: value(selects.state),
      execution: value(selects.execution),
      grading: value(selects.grading),
      kase: value(selects.kase),
      arm: value(selects.arm),
      check: value(selects.check),
      status: value(selects.checkStatus),
    };
  }

  function rowMatches(group, r, w) {
    return (!w.task || r[2] === w.task) && (!w.execution || r[3] === w.execution) &&
      (!w.grading || r[4] === w.grading) && (!w.kase || group.caseId === w.kase) &&
      (!w.arm || group.arm === w.arm) && checkMatches(r[5], w.check, w.status);
  }

  function trialRow(group, r) {
    var details = el("details", "trial");
    details.id = r[0];
    details.setAttribute("data-state", r[2]);
    details.setAttribute("data-execution", r[3]);
    details.setAttribute("data-grading", r[4]);
    var summary = add(details, "summary");
    add(summary, "span", "state s-" + r[2], r[2]);
    summary.appendChild(document.createTextNode(" " + group.caseId +
      (group.arm ? " @ " + group.arm : "") + " trial " + r[1] + " "));
    add(summary, "a", "permalink", "#").setAttribute("href", "#" + r[0]);
    var body = add(details, "div", "trial-body lazy");
    body.setAttribute("data-anchor", r[0]);
    body.setAttribute("data-block", group.block);
    add(body, "p", "none loading", "trial details are shown when opened");
    return details;
  }

  function draw(group) {
    if (group.rowElements) {
      return;
    }
    var fragment = document.createDocumentFragment();
    group.rowElements = group.rows.map(function (r, i) {
      var details = fragment.appendChild(trialRow(group, r));
      details.hidden = !group.shown[i];
      return details;
    });
    group.list.appendChild(fragment);
  }

  function applyFilters() {
    var w = wantedNow();
    var filtering = Object.keys(w).some(function (key) {
      return w[key];
    });
    var total = 0;
    var visibleCount = 0;
    groups.forEach(function (group) {
      var matches = 0;
      group.rows.forEach(function (r, i) {
        var visible = rowMatches(group, r, w);
        group.shown[i] = visible;
        matches += visible ? 1 : 0;
        if (group.rowElements) {
          group.rowElements[i].hidden = !visible;
        }
      });
      total += group.rows.length;
      visibleCount += matches;
      group.element.hidden = filtering && matches === 0;
      group.count.textContent = filtering ? "(" + matches + " match the filters)" : "";
    });
    if (count) {
      count.textContent = visibleCount + " of " + total + " trials shown";
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
    if (has(groupOf, id)) {
      var group = groupOf[id];
      if (!group.shown[group.rows.findIndex(function (r) { return r[0] === id; })]) {
        clearFilters();
      }
      draw(group);
      group.element.open = true;
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

  Array.prototype.forEach.call(document.querySelectorAll(".trials"), function (section) {
    var source = document.getElementById("index-" + section.getAttribute("data-run-index"));
    var index = source && source.type === "application/json" ? JSON.parse(source.textContent) : [];
    var elements = section.querySelectorAll("details.case-trials");
    Array.prototype.forEach.call(elements, function (element) {
      var rows = index[Number(element.getAttribute("data-group"))] || [];
      var group = {
        element: element,
        list: element.querySelector(".case-trial-list"),
        count: element.querySelector(".group-count"),
        caseId: element.getAttribute("data-case"),
        arm: element.getAttribute("data-arm"),
        block: element.getAttribute("data-block"),
        rows: rows,
        shown: rows.map(function () { return true; }),
        rowElements: null,
      };
      rows.forEach(function (r) {
        groupOf[r[0]] = group;
      });
      groups.push(group);
    });
  });
  Object.keys(selects).forEach(function (key) {
    if (selects[key]) {
      selects[key].addEventListener("change", applyFilters);
    }
  });
  // "toggle" does not bubble; capturing it on the document sees every details element open.
  document.addEventListener("toggle", function (event) {
    var target = event.target;
    if (target.tagName !== "DETAILS" || !target.open) {
      return;
    }
    if (target.classList.contains("case-trials")) {
      groups.forEach(function (group) {
        if (group.element === target) {
          draw(group);
        }
      });
    } else {
      renderInside(target);
    }
  }, true);
  window.addEventListener("hashchange", openFromHash);
  applyFilters();
  groups.forEach(function (group) {
    if (group.element.open) {
      draw(group);
    }
  });
  openFromHash();
})();

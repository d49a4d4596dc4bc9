// sevro view: filters and deep links. No inline handlers: the page's CSP allows only this
// script (by its hash), and nothing here turns page text into markup (textContent only).
(function () {
  "use strict";
  var selects = {
    state: document.getElementById("filter-state"),
    kase: document.getElementById("filter-case"),
    arm: document.getElementById("filter-arm"),
    check: document.getElementById("filter-check"),
    checkStatus: document.getElementById("filter-check-status"),
  };
  var count = document.getElementById("filter-count");
  var trials = Array.prototype.slice.call(document.querySelectorAll("details.trial"));

  function value(select) {
    return select ? select.value : "";
  }

  function checkMatches(trial, check, status) {
    if (!check && !status) {
      return true;
    }
    var outcomes = trial.querySelectorAll("tr[data-check]");
    for (var i = 0; i < outcomes.length; i += 1) {
      var row = outcomes[i];
      if ((!check || row.getAttribute("data-check") === check) &&
          (!status || row.getAttribute("data-check-status") === status)) {
        return true;
      }
    }
    return false;
  }

  function applyFilters() {
    var state = value(selects.state);
    var kase = value(selects.kase);
    var arm = value(selects.arm);
    var check = value(selects.check);
    var status = value(selects.checkStatus);
    var shown = 0;
    trials.forEach(function (trial) {
      var visible = (!state || trial.getAttribute("data-state") === state) &&
        (!kase || trial.getAttribute("data-case") === kase) &&
        (!arm || trial.getAttribute("data-arm") === arm) &&
        checkMatches(trial, check, status);
      trial.hidden = !visible;
      if (visible) {
        shown += 1;
      }
    });
    if (count) {
      count.textContent = shown + " of " + trials.length + " trials shown";
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
    target.open = true;
    target.classList.add("linked");
    target.scrollIntoView();
  }

  Object.keys(selects).forEach(function (key) {
    if (selects[key]) {
      selects[key].addEventListener("change", applyFilters);
    }
  });
  window.addEventListener("hashchange", openFromHash);
  applyFilters();
  openFromHash();
})();

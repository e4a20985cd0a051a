// foldsweep viewer: the units table's filter language in an exported file. The same grammar,
// meaning and messages as pipeline/view/filter_expr.py (its docstring is the reference);
// tests/view/filter_cases.py holds the cases both must pass. No eval: a recursive descent.
(function () {
  "use strict";

  var OPERATORS = ["=", "!=", "<", "<=", ">", ">=", "contains"];
  var TOKEN = new RegExp(
    "\\s*(?:(-?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][-+]?\\d+)?(?![A-Za-z0-9_.]))" +
    "|([A-Za-z_][A-Za-z0-9_.]*)|(\"[^\"]*\"|'[^']*')|(<=|>=|!=|=|<|>)|([()]))", "y");
  var KINDS = ["number", "word", "string", "op", "paren"];
  var NUMBER_TEXT = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

  function FilterError(message) { this.message = message; }

  function tokens(text) {
    var out = [];
    var at = 0;
    while (text.slice(at).trim()) {
      TOKEN.lastIndex = at;
      var found = TOKEN.exec(text);
      if (!found) {
        var start = text.length - text.slice(at).replace(/^\s+/, "").length;
        if (text[start] === "\"" || text[start] === "'") {
          throw new FilterError("filter: unterminated string at " + (start + 1));
        }
        throw new FilterError("filter: unexpected \"" + text[start] + "\" at " + (start + 1));
      }
      for (var k = 1; k <= KINDS.length; k++) {
        if (found[k] !== undefined) {
          var begins = found.index + found[0].length - found[k].length;
          out.push({ kind: KINDS[k - 1], text: found[k], at: begins + 1 });
          break;
        }
      }
      at = TOKEN.lastIndex;
    }
    out.push({ kind: "end", text: "", at: text.length + 1 });
    return out;
  }

  function expected(what, token) {
    var found = token.kind === "end" ? "the end" : "\"" + token.text + "\"";
    return new FilterError("filter: expected " + what + " at " + token.at + ", found " + found);
  }

  // The expression's tree (null when it is empty); throws a FilterError on a bad one.
  function parse(text, columns) {
    if (!text.trim()) { return null; }
    var found = tokens(text);
    var next = 0;
    function peek() { return found[next]; }
    function take() { next += 1; return found[next - 1]; }
    function isWord(word) { return peek().kind === "word" && peek().text.toLowerCase() === word; }

    function expr() {
      var node = term();
      while (isWord("or")) { take(); node = { join: "or", left: node, right: term() }; }
      return node;
    }
    function term() {
      var node = factor();
      while (isWord("and")) { take(); node = { join: "and", left: node, right: factor() }; }
      return node;
    }
    function factor() {
      var token = take();
      if (token.kind === "paren" && token.text === "(") {
        var node = expr();
        var closing = take();
        if (closing.text !== ")" || closing.kind !== "paren") { throw expected("\")\"", closing); }
        return node;
      }
      var lower = token.text.toLowerCase();
      if (token.kind !== "word" || lower === "and" || lower === "or" || lower === "contains") {
        throw expected("a column name", token);
      }
      if (columns.indexOf(token.text) < 0) {
        throw new FilterError("filter: no column \"" + token.text + "\" at " + token.at);
      }
      var op = take();
      if (!(op.kind === "op" || (op.kind === "word" && op.text.toLowerCase() === "contains"))) {
        throw expected("an operator (" + OPERATORS.join(" ") + ")", op);
      }
      var value = take();
      var opName = op.text.toLowerCase();
      if (value.kind === "number") {
        return { column: token.text, op: opName, value: Number(value.text), literal: value.text };
      }
      if (value.kind === "string") {
        var inner = value.text.slice(1, -1);
        return { column: token.text, op: opName, value: inner, literal: inner };
      }
      throw expected("a value (a number or a quoted string)", value);
    }

    var node = expr();
    var last = peek();
    if (last.kind !== "end") {
      throw new FilterError(
        "filter: expected \"and\", \"or\" or the end at " + last.at + ", found \"" + last.text + "\"");
    }
    return node;
  }

  function compare(cell, op, value) {
    switch (op) {
      case "=": return cell === value;
      case "!=": return cell !== value;
      case "<": return cell < value;
      case "<=": return cell <= value;
      case ">": return cell > value;
      default: return cell >= value;
    }
  }

  // Does unit `i` of `data` (cells.units_data: per unit, its cells' text and numbers) match?
  function matches(node, data, i) {
    if (node.join === "and") { return matches(node.left, data, i) && matches(node.right, data, i); }
    if (node.join === "or") { return matches(node.left, data, i) || matches(node.right, data, i); }
    var text = data.rows[i][0][data.columns.indexOf(node.column)];
    if (node.op === "contains") {
      return text.toLowerCase().indexOf(node.literal.toLowerCase()) >= 0;
    }
    if (typeof node.value === "number") {
      var k = data.numeric.indexOf(node.column);
      var cell = k >= 0 ? data.rows[i][1][k] : (NUMBER_TEXT.test(text) ? Number(text) : null);
      return cell !== null && isFinite(cell) && compare(cell, node.op, node.value);
    }
    return compare(text, node.op, node.value);
  }

  // Does any text column of unit `i` contain `needle` (lower-cased)? The search of the export.
  function contains(data, i, needle) {
    return data.strings.some(function (name) {
      return data.rows[i][0][data.columns.indexOf(name)].toLowerCase().indexOf(needle) >= 0;
    });
  }

  window.foldsweepFilter = { parse: parse, matches: matches, contains: contains, FilterError: FilterError };
})();

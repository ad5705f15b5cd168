#include "trace.hpp"

#include <cctype>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace simpler::chip {

namespace {

std::string json_escape(const std::string& s) {
    std::string out;
    out.reserve(s.size() + 2);
    for (const char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out;
}

void make_dirs(const std::string& dir) {
    std::string partial;
    std::stringstream ss(dir);
    std::string part;
    if (!dir.empty() && dir[0] == '/') partial = "/";
    while (std::getline(ss, part, '/')) {
        if (part.empty()) continue;
        partial += part + "/";
        if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
            throw std::runtime_error("cannot create output directory " + partial + ": " + std::strerror(errno));
    }
}

std::string write_atomically(const std::string& output_prefix, const std::string& name, const std::string& text) {
    make_dirs(output_prefix);
    std::string path = output_prefix;
    if (!path.empty() && path.back() != '/') path += '/';
    path += name;
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
        f << text;
        f.close();
        if (!f) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw std::runtime_error("cannot rename into " + path + ": " + std::strerror(errno));
    }
    return path;
}

}  // namespace

std::string TraceName::stem() const {
    std::string out = program.empty() ? std::string("program") : program;
    for (char& c : out)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
    return out + "_call" + std::to_string(call);
}

std::string write_swimlane(const std::string& output_prefix, const TraceName& name,
                           const std::vector<std::string>& thread_names, const std::vector<TraceSlice>& slices) {
    std::ostringstream o;
    o << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    o << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\""
      << json_escape(name.program) << " call " << name.call << " (run " << name.run_id << ")\"}}";
    for (std::size_t i = 0; i < thread_names.size(); ++i)
        o << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << i << ",\"args\":{\"name\":\""
          << json_escape(thread_names[i]) << "\"}}";
    char num[64];
    for (const TraceSlice& s : slices) {
        o << ",\n{\"name\":\"" << json_escape(s.task < 0 ? s.name : s.name + " #" + std::to_string(s.task))
          << "\",\"cat\":\""
          << (s.task == kOrchestrationSlice ? "orchestration" : s.task == kSchedulerSlice ? "scheduler" : "task") << "\",\"ph\":\"X\",\"pid\":0,\"tid\":" << s.thread;
        std::snprintf(num, sizeof num, "%.3f", static_cast<double>(s.start_ns) / 1000.0);
        o << ",\"ts\":" << num;
        std::snprintf(num, sizeof num, "%.3f", static_cast<double>(s.end_ns - s.start_ns) / 1000.0);
        o << ",\"dur\":" << num << ",\"args\":{\"task\":" << s.task << ",\"func_id\":" << s.func_id << "}}";
    }
    o << "\n]}\n";
    return write_atomically(output_prefix, name.stem() + ".swimlane.json", o.str());
}

std::string write_dep_graph(const std::string& output_prefix, const TraceName& name, const std::vector<TaskNode>& nodes) {
    std::ostringstream o;
    o << "{\"program\":\"" << json_escape(name.program) << "\",\"call\":" << name.call << ",\"run\":" << name.run_id
      << ",\"tasks\":[";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const TaskNode& n = nodes[i];
        o << (i ? ",\n" : "\n") << "{\"task\":" << n.index << ",\"func_id\":" << n.func_id << ",\"kernel\":\""
          << json_escape(n.kernel) << "\",\"deps\":[";
        for (std::size_t d = 0; d < n.deps.size(); ++d) o << (d ? "," : "") << n.deps[d];
        o << "]}";
    }
    o << "\n]}\n";
    return write_atomically(output_prefix, name.stem() + ".deps.json", o.str());
}

}  // namespace simpler::chip
